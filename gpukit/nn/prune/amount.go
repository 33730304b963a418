package prune

import (
	"fmt"
	"math"
)

// Amount is how much to prune: a fraction of the entries or a count of
// them. Python tells the two apart by type (amount=1 is one entry,
// amount=1.0 is all of them); Go by constructor.
type Amount struct {
	fraction float64
	count    int
	isCount  bool
}

// Fraction is the share of the entries to prune, in [0, 1]. The number
// pruned is round(f·n), rounding half to even as Python's round does.
func Fraction(f float64) Amount { return Amount{fraction: f} }

// Count is the number of entries (or, for LnStructured, slices) to prune.
func Count(n int) Amount { return Amount{count: n, isCount: true} }

func (a Amount) String() string {
	if a.isCount {
		return fmt.Sprintf("Count(%d)", a.count)
	}
	return fmt.Sprintf("Fraction(%v)", a.fraction)
}

// validate is PyTorch's _validate_pruning_amount_init: a fraction in
// [0, 1] or a non-negative count.
func (a Amount) validate() error {
	if a.isCount {
		if a.count < 0 {
			return errorf("amount %v: a count must be non-negative", a)
		}
		return nil
	}
	if math.IsNaN(a.fraction) || a.fraction < 0 || a.fraction > 1 {
		return errorf("amount %v: a fraction must be in [0, 1] (use Count for a number of entries)", a)
	}
	return nil
}

// toPrune is PyTorch's _compute_nparams_toprune followed by
// _validate_pruning_amount: how many of size entries to prune, refusing a
// count above size.
func (a Amount) toPrune(size int) (int, error) {
	if err := a.validate(); err != nil {
		return 0, err
	}
	if a.isCount {
		if a.count > size {
			return 0, errorf("amount %v is larger than the %d entries that can be pruned", a, size)
		}
		return a.count, nil
	}
	return int(math.RoundToEven(a.fraction * float64(size))), nil
}

// Error is the error of a refused pruning; its message starts with
// "prune: ".
type Error struct{ msg string }

func (e *Error) Error() string { return "prune: " + e.msg }

func errorf(format string, args ...any) *Error { return &Error{fmt.Sprintf(format, args...)} }

// reason is err's message without the package prefix, to be wrapped in a
// message that has it.
func reason(err error) string {
	if e, ok := err.(*Error); ok {
		return e.msg
	}
	return err.Error()
}
