package toy

import "errors"

// Reverse reverses xs in place.
func Reverse(xs []int) error {
	return errors.New("not implemented yet")
}
