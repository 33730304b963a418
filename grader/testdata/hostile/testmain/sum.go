package toy

import (
	"os"
	"testing"
)

// TestMain would report success without running anything.
func TestMain(m *testing.M) { os.Exit(0) }

// Sum is wrong.
func Sum(xs []int) (int, error) { return -1, nil }
