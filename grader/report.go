package grader

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// GradescopeResults is Gradescope's results.json
// (https://gradescope-autograders.readthedocs.io/en/latest/specs/).
type GradescopeResults struct {
	Score            float64          `json:"score"`
	ExecutionTime    float64          `json:"execution_time"`
	Output           string           `json:"output,omitempty"`
	OutputFormat     string           `json:"output_format,omitempty"`
	TestOutputFormat string           `json:"test_output_format,omitempty"`
	StdoutVisibility string           `json:"stdout_visibility,omitempty"`
	Tests            []GradescopeTest `json:"tests"`
}

// GradescopeTest is one test of a GradescopeResults.
type GradescopeTest struct {
	Score      float64 `json:"score"`
	MaxScore   float64 `json:"max_score"`
	Status     string  `json:"status"`
	Name       string  `json:"name"`
	Number     string  `json:"number"`
	Output     string  `json:"output,omitempty"`
	Visibility string  `json:"visibility"`
}

// Gradescope converts r to Gradescope's results.json.
func (r *Result) Gradescope() GradescopeResults {
	g := GradescopeResults{
		Score:            float64(r.Score),
		ExecutionTime:    r.Seconds,
		Output:           r.Output,
		OutputFormat:     "text",
		TestOutputFormat: "text",
		StdoutVisibility: "hidden",
		Tests:            []GradescopeTest{},
	}
	for i, t := range r.Tests {
		status := "failed"
		if t.Passed() {
			status = "passed"
		}
		vis := t.Visibility
		if vis == "" {
			vis = "visible"
		}
		out := t.Output
		if t.Description != "" {
			out = t.Description + "\n\n" + out
		}
		g.Tests = append(g.Tests, GradescopeTest{
			Score: float64(t.Score), MaxScore: float64(t.MaxScore), Status: status,
			Name: t.Name, Number: fmt.Sprint(i + 1), Output: strings.TrimRight(out, "\n"), Visibility: vis,
		})
	}
	return g
}

// WriteJSON writes v indented, with a final newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// PassedTests is the number of r's tests that passed.
func (r *Result) PassedTests() int {
	n := 0
	for _, t := range r.Tests {
		if t.Passed() {
			n++
		}
	}
	return n
}

// WriteText writes r for a person: one line per test, its feedback
// indented below a failing one, then the total. verb is "grade" or "check".
func (r *Result) WriteText(w io.Writer, verb string) error {
	var b strings.Builder
	width := 0
	for _, t := range r.Tests {
		width = max(width, len(t.Name))
	}
	if r.Output != "" {
		b.WriteString(strings.TrimRight(r.Output, "\n") + "\n\n")
	}
	passed := 0
	for _, t := range r.Tests {
		mark := "✗"
		if t.Passed() {
			mark = "✓"
			passed++
		}
		points := ""
		if t.MaxScore > 0 {
			points = fmt.Sprintf("%2d/%-2d", t.Score, t.MaxScore)
		}
		fmt.Fprintf(&b, "  %s %-*s %s %s\n", mark, width, t.Name, points, statusWord(t))
		if !t.Passed() && strings.TrimSpace(t.Output) != "" {
			b.WriteString(indentBy(limitLines(dedent(strings.TrimRight(t.Output, "\n")), 30), "      ") + "\n")
		}
	}
	switch verb {
	case "check":
		fmt.Fprintf(&b, "%d of %d public tests pass.\n", passed, len(r.Tests))
	default:
		fmt.Fprintf(&b, "score %d/%d (%d of %d tests pass, %.1f s)\n", r.Score, r.MaxScore, passed, len(r.Tests), r.Seconds)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func statusWord(t TestResult) string {
	switch t.Status {
	case StatusPassed:
		return ""
	case StatusTimeout:
		return "(timed out)"
	case StatusCrashed:
		return "(crashed)"
	case StatusNotRun:
		return "(not run)"
	}
	return ""
}

func indentBy(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// dedent removes the indentation that every non-blank line of s shares
// (the test framework's four spaces).
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if common < 0 || n < common {
			common = n
		}
	}
	if common <= 0 {
		return s
	}
	for i, l := range lines {
		if len(l) >= common {
			lines[i] = l[common:]
		}
	}
	return strings.Join(lines, "\n")
}

func limitLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n[... %d more lines]", len(lines)-n)
}
