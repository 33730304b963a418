// Mutant: Fits trusts the ZeRO paper's formula for the model states against the card's capacity, leaving out activations, temporaries and the CUDA context.

package choosecards

import (
	"errors"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/distributed"
)

// Fits reports whether training m at plan p fits on cards of profile
// card: two training steps (the first allocates the gradients and Adam's
// state as it goes, the second is every later step) run on p.Devices
// meta cards of that profile, each with its own share of Tokens rows,
// without an out-of-memory error. A failure that is not an out-of-memory
// error is returned as an error.
func Fits(m Model, p Plan, card device.Profile) (bool, error) {
	need := distributed.FormulaBytes(float64(m.Params()), p.Devices, p.Stage, 12)
	return need <= float64(card.Capacity), nil
}

// oom turns an out-of-memory error into "does not fit" and passes any
// other error on.
func oom(err error) (bool, error) {
	var o *alloc.OutOfMemoryError
	if errors.As(err, &o) {
		return false, nil
	}
	return false, err
}

// Choose returns the plan with the fewest cards (a power of two up to
// MaxDevices) on which m fits, and among the stages that fit on that
// many cards the lowest (the least communication). ok is false when no
// plan fits.
func Choose(m Model, card device.Profile) (p Plan, ok bool, err error) {
	for n := 1; n <= MaxDevices; n *= 2 {
		for s := distributed.DDP; s <= distributed.ZeRO3; s++ {
			fits, err := Fits(m, Plan{n, s}, card)
			if err != nil {
				return Plan{}, false, err
			}
			if fits {
				return Plan{n, s}, true, nil
			}
		}
	}
	return Plan{}, false, nil
}
