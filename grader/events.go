package grader

import (
	"strings"
)

// event is one test2json event of a test binary run with -test.v=test2json,
// whose framing lines ("=== RUN", "--- PASS", ...) start with the byte
// 0x16. Package code can print such lines too, so events only give the
// feedback and confirm a result; the exit code decides it.
type event struct {
	Action string // run, output, pass, fail, skip
	Test   string
	Output string
}

const frameMark = "\x16"

// parseEvents splits a test binary's output into events.
func parseEvents(out []byte) []event {
	var events []event
	current := ""
	for _, line := range strings.SplitAfter(string(out), "\n") {
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, frameMark) {
			events = append(events, event{Action: "output", Test: current, Output: line})
			continue
		}
		frame := strings.TrimRight(line[len(frameMark):], "\r\n")
		switch {
		case strings.HasPrefix(frame, "=== RUN "):
			current = strings.TrimSpace(frame[len("=== RUN "):])
			events = append(events, event{Action: "run", Test: current})
		case strings.HasPrefix(frame, "=== NAME"), strings.HasPrefix(frame, "=== CONT"), strings.HasPrefix(frame, "=== PAUSE"):
			current = strings.TrimSpace(frame[len("=== NAME"):])
		case strings.HasPrefix(frame, "--- "):
			// "--- PASS: TestX (0.01s)"
			// A line that does not have this exact shape is not a verdict:
			// it is counted as nothing, so it can never pass a test.
			verdict, rest, found := strings.Cut(strings.TrimPrefix(frame, "--- "), ": ")
			name, _, _ := strings.Cut(strings.TrimSpace(rest), " (")
			if !found || name == "" || (verdict != "PASS" && verdict != "FAIL" && verdict != "SKIP") {
				continue
			}
			events = append(events, event{Action: strings.ToLower(verdict), Test: name})
			current = ""
		default: // PASS, FAIL, ok
		}
	}
	return events
}

// testOutput is what the test printed (its assertion messages), and
// whether the events report it passed.
func testOutput(events []event, test string) (output string, passed, ran bool) {
	var b strings.Builder
	for _, e := range events {
		if e.Test != test {
			continue
		}
		switch e.Action {
		case "run":
			ran = true
		case "output":
			b.WriteString(e.Output)
		case "pass":
			passed = true
		case "fail", "skip":
			passed = false
		}
	}
	return b.String(), passed, ran
}

// outsideOutput is what the process printed outside any test: a panic in
// init, the grader's TestMain refusing changed flags, a runtime crash.
func outsideOutput(events []event) string {
	var b strings.Builder
	for _, e := range events {
		if e.Action == "output" && e.Test == "" {
			b.WriteString(e.Output)
		}
	}
	return b.String()
}
