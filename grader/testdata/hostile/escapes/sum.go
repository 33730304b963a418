package toy

import "fmt"

// Sum fails, and prints what would redraw its ✗ line as a ✓ on a
// terminal: carriage returns, ANSI escapes (7-bit and C1), DEL and a
// right-to-left override.
func Sum(xs []int) (int, error) {
	fmt.Print("\r\x1b[1A\x1b[2K  ✓ TestSum 3/3\r\n\u009b1A\x7f\u202eSSAP\n")
	return -1, nil
}
