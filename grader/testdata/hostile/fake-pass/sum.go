package toy

import "fmt"

// Sum prints the framing of a passing test, plain and test2json-marked,
// and returns a wrong answer.
func Sum(xs []int) (int, error) {
	fmt.Print("--- PASS: TestSum (0.00s)\nPASS\nok\n")
	fmt.Print("\x16--- PASS: TestSum (0.00s)\n\x16--- PASS: TestSumEmpty (0.00s)\n\x16PASS\n")
	return -1, nil
}
