package snapwhatif

import (
	"errors"

	"github.com/gpumem/course/gpukit/alloc/snapshot"
	"github.com/gpumem/course/gpukit/device"
)

// Choose replays the requests of snapshot s on a card of profile card once
// per option (an allocator setting in PYTORCH_CUDA_ALLOC_CONF's syntax,
// plus per_process_memory_fraction:F; "" is PyTorch's default) and returns
// the table, one Row per option in the order given, with the setting to
// run under: of those that fit, the one with the fewest retries, then the
// lowest peak reserved memory, then the earlier option. The card's CUDA
// context counts against its memory. The trace replayed is the one of the
// device with the most events in s (the first on a tie). No options, or an
// option that is not a setting, is an error.
func Choose(s *snapshot.Snapshot, card device.Profile, options []string) (Choice, error) {
	return Choice{}, errors.New("not implemented yet")
}
