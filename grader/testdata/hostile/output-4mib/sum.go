package toy

import (
	"fmt"
	"strings"
)

// Sum prints a little less than the 4 MiB a test may print, in short
// lines, then returns a wrong answer: every test that calls it costs the
// grader the most output it can.
func Sum(xs []int) (int, error) {
	line := strings.Repeat("x", 40)
	for i := 0; i < (4<<20-64<<10)/48; i++ {
		fmt.Printf("%6d %s\n", i, line)
	}
	return -1, nil
}
