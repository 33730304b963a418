package nn

import "fmt"

// Error is the panic value of misuse inside a module (a wrong input shape,
// a bad size); its message starts with "nn: ". Errors of loading and
// saving state dicts are returned, not raised.
type Error struct{ msg string }

func (e *Error) Error() string { return "nn: " + e.msg }

func errorf(format string, args ...any) *Error { return &Error{fmt.Sprintf(format, args...)} }
