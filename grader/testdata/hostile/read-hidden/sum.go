package toy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// hiddenDir is replaced by the test with the hidden tests' folder.
const hiddenDir = "HIDDEN_DIR"

// Sum looks for the hidden tests, prints what it finds and returns a wrong
// answer.
func Sum(xs []int) (int, error) {
	paths := []string{filepath.Join(hiddenDir, "hidden_test.go")}
	for dir := "."; len(dir) < 40; dir = filepath.Join(dir, "..") {
		matches, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		paths = append(paths, matches...)
		more, _ := filepath.Glob(filepath.Join(dir, "grader", "hidden", "*", "*_test.go"))
		paths = append(paths, more...)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(data), "func Test") {
			fmt.Printf("found %s:\n%s\n", p, data)
		}
	}
	return -1, nil
}
