package tensor

import (
	"fmt"
)

// Error is the typed error of misuse: shape, dtype or device mismatch, use
// after release, autograd misuse. Ops panic with an *Error (as gonum/mat
// does); Try turns the panic back into an error at an API boundary.
// Its message always starts with "tensor: ".
type Error struct {
	msg string
}

func (e *Error) Error() string { return "tensor: " + e.msg }

func errorf(format string, args ...any) *Error {
	return &Error{msg: fmt.Sprintf(format, args...)}
}

// panicf panics with an *Error.
func panicf(format string, args ...any) {
	panic(errorf(format, args...))
}

// Try runs fn and returns, as an error, a panic raised inside it with an
// *Error (misuse) or an error from an allocation (such as
// *alloc.OutOfMemoryError, which errors.As finds in the result). Other
// panics (runtime errors, bugs) propagate unchanged.
//
//	err := tensor.Try(func() { y = x.Matmul(w) })
//	var oom *alloc.OutOfMemoryError
//	if errors.As(err, &oom) { ... }
func Try(fn func()) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if e, ok := r.(*Error); ok {
			err = e
			return
		}
		if e, ok := r.(error); ok && isAllocError(e) {
			err = e
			return
		}
		panic(r)
	}()
	if fn == nil {
		return errorf("Try: fn is nil; pass the function to run")
	}
	fn()
	return nil
}

// panicAlloc panics with an allocation error: an out-of-memory error
// unchanged (so that errors.As finds *alloc.OutOfMemoryError through Try),
// anything else as an *Error.
func panicAlloc(err error) {
	if e, ok := err.(*Error); ok {
		panic(e)
	}
	if isAllocError(err) {
		panic(err)
	}
	panic(errorf("allocation failed: %v", err))
}
