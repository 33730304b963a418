package grader

import (
	"bytes"
	"fmt"
	"strings"
)

// testLog reads the output of a test binary run with -test.v=test2json as
// it comes, line by line, and keeps what grading needs, bounded whatever
// the test prints: whether the graded test ran and passed, the head and
// tail of what it printed and of what the process printed outside any
// test, and which of the runtime's tell-tale messages appeared. The framing
// lines ("=== RUN", "--- PASS", ...) start with the byte 0x16. Package code
// can print such lines too, so the log only gives the feedback and
// confirms a result; the test's own report decides it (Note [A verdict
// only a test that ran can give]).
type testLog struct {
	test      string // the graded test
	current   string // the test the next output line belongs to
	line      []byte // the line being read
	continued bool   // line continues a fragment already processed
	ran       bool
	passed    bool
	text      headTail // the test's own output (its assertion messages)
	outside   headTail // output outside any test: a panic in init, a runtime crash
	seen      map[string]bool
}

// maxLine bounds a line: a longer one is processed in pieces of this size.
const maxLine = 64 << 10

// Messages of the test framework and the runtime that say how a test
// ended, looked for in every line.
const (
	msgTimedOut    = "panic: test timed out after"
	msgThreads     = "pthread_create failed"
	msgNewOSProc   = "newosproc"
	msgOutOfMemory = "out of memory"
	msgNoMemory    = "cannot allocate memory"
	msgExit0       = "unexpected call to os.Exit(0) during test"
)

var tellTales = [][]byte{[]byte(msgTimedOut), []byte(msgThreads), []byte(msgNewOSProc), []byte(msgOutOfMemory), []byte(msgNoMemory), []byte(msgExit0)}

func newTestLog(test string) *testLog {
	return &testLog{test: test, text: headTail{keep: maxFeedback}, outside: headTail{keep: maxFeedback}, seen: map[string]bool{}}
}

// Write takes the next piece of output; it never fails.
func (l *testLog) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.line = append(l.line, p...)
			if len(l.line) >= maxLine {
				l.process(l.line)
				l.line, l.continued = l.line[:0], true
			}
			break
		}
		l.line = append(l.line, p[:i+1]...)
		p = p[i+1:]
		l.process(l.line)
		l.line, l.continued = l.line[:0], false
	}
	return n, nil
}

// Close processes a last line without a newline.
func (l *testLog) Close() error {
	if len(l.line) > 0 {
		l.process(l.line)
		l.line = l.line[:0]
	}
	return nil
}

// saw reports whether a line contained msg.
func (l *testLog) saw(msg string) bool { return l.seen[msg] }

func (l *testLog) process(line []byte) {
	for _, m := range tellTales {
		if !l.seen[string(m)] && bytes.Contains(line, m) {
			l.seen[string(m)] = true
		}
	}
	if l.continued || !bytes.HasPrefix(line, []byte(frameMark)) {
		switch l.current {
		case l.test:
			l.text.Write(line)
		case "":
			l.outside.Write(line)
		}
		return
	}
	frame := strings.TrimRight(string(line[len(frameMark):]), "\r\n")
	switch {
	case strings.HasPrefix(frame, "=== RUN "):
		l.current = strings.TrimSpace(frame[len("=== RUN "):])
		if l.current == l.test {
			l.ran = true
		}
	case strings.HasPrefix(frame, "=== NAME"), strings.HasPrefix(frame, "=== CONT"), strings.HasPrefix(frame, "=== PAUSE"):
		l.current = strings.TrimSpace(frame[len("=== NAME"):])
	case strings.HasPrefix(frame, "--- "):
		// "--- PASS: TestX (0.01s)"
		// A line that does not have this exact shape is not a verdict:
		// it is counted as nothing, so it can never pass a test.
		verdict, rest, found := strings.Cut(strings.TrimPrefix(frame, "--- "), ": ")
		name, _, _ := strings.Cut(strings.TrimSpace(rest), " (")
		if !found || name == "" || (verdict != "PASS" && verdict != "FAIL" && verdict != "SKIP") {
			return
		}
		if name == l.test {
			l.passed = verdict == "PASS"
		}
		l.current = ""
	default: // PASS, FAIL, ok
	}
}

const frameMark = "\x16"

// headTail keeps the first and the last keep/2 bytes written to it.
type headTail struct {
	keep  int
	head  []byte
	tail  []byte
	total int64
}

func (h *headTail) Write(p []byte) {
	h.total += int64(len(p))
	if room := h.keep/2 - len(h.head); room > 0 {
		n := min(room, len(p))
		h.head = append(h.head, p[:n]...)
		p = p[n:]
	}
	h.tail = append(h.tail, p...)
	if half := h.keep / 2; len(h.tail) > 2*half {
		h.tail = append(h.tail[:0], h.tail[len(h.tail)-half:]...)
	}
}

// String is what was kept; where bytes were cut, the lines cut in part go
// too, so that no fragment of a line escapes the redactor, which removes
// whole lines.
func (h *headTail) String() string {
	if int64(len(h.head)+len(h.tail)) == h.total {
		return string(h.head) + string(h.tail)
	}
	head := h.head[:bytes.LastIndexByte(h.head, '\n')+1]
	tail := h.tail[len(h.tail)-min(len(h.tail), h.keep/2):]
	if i := bytes.IndexByte(tail, '\n'); i >= 0 {
		tail = tail[i+1:]
	} else {
		tail = nil
	}
	return fmt.Sprintf("%s[... %d bytes cut ...]\n%s", head, h.total-int64(len(head)+len(tail)), tail)
}
