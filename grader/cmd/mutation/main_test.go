package main

import (
	"bytes"
	"strings"
	"testing"
)

const src = `package p

func f(a, b int, ok bool) int {
	if a < b && ok {
		a += b
	}
	for i := 0; i < 3; i++ {
		if i == 1 {
			continue
		}
		a = -a
	}
	return a % b
}
`

// The rewrite is gremlins': the operator at the position becomes what the
// mutator makes of it, nothing else changes.
func TestApplyMutation(t *testing.T) {
	cases := []struct {
		line, col int
		typ       string
		change    string
		want      string
	}{
		{4, 7, "CONDITIONALS_BOUNDARY", "< → <=", "if a <= b && ok {"},
		{4, 7, "CONDITIONALS_NEGATION", "< → >=", "if a >= b && ok {"},
		{4, 11, "INVERT_LOGICAL", "&& → ||", "if a < b || ok {"},
		{5, 5, "REMOVE_SELF_ASSIGNMENTS", "+= → =", "a = b"},
		{5, 5, "INVERT_ASSIGNMENTS", "+= → -=", "a -= b"},
		{7, 22, "INCREMENT_DECREMENT", "++ → --", "i--"},
		{9, 4, "INVERT_LOOPCTRL", "continue → break", "break"},
		{11, 7, "INVERT_NEGATIVES", "- → +", "a = +a"},
		{13, 11, "ARITHMETIC_BASE", "% → *", "return a * b"},
	}
	for _, c := range cases {
		got, change, err := applyMutation("p.go", []byte(src), c.line, c.col, c.typ)
		if err != nil {
			t.Errorf("%d:%d %s: %v", c.line, c.col, c.typ, err)
			continue
		}
		if change != c.change || !strings.Contains(string(got), c.want) {
			t.Errorf("%d:%d %s: change %q, want %q; source:\n%s", c.line, c.col, c.typ, change, c.change, got)
		}
		if bytes.Equal(got, []byte(src)) {
			t.Errorf("%d:%d %s: nothing changed", c.line, c.col, c.typ)
		}
	}
	if _, _, err := applyMutation("p.go", []byte(src), 4, 8, "CONDITIONALS_BOUNDARY"); err == nil {
		t.Error("a position with no operator: no error")
	}
	if _, _, err := applyMutation("p.go", []byte(src), 4, 11, "ARITHMETIC_BASE"); err == nil {
		t.Error("an operator the mutator does not change (&& for ARITHMETIC_BASE): no error")
	}
}

func TestParseEquivalents(t *testing.T) {
	eq, err := parseEquivalents("e.txt", "# comment\n\nshare.go:34:52 CONDITIONALS_NEGATION  err is never nil here\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := eq["share.go:34:52 CONDITIONALS_NEGATION"]; got != "err is never nil here" {
		t.Errorf("reason %q", got)
	}
	for _, bad := range []string{
		"share.go:34:52 CONDITIONALS_NEGATION\n",                     // no reason
		"share.go:34 CONDITIONALS_NEGATION  reason\n",                // no column
		"share.go:34:52 NO_SUCH_MUTATOR  reason\n",                   // unknown mutator
		"a.go:1:1 ARITHMETIC_BASE  x\na.go:1:1 ARITHMETIC_BASE  y\n", // twice
	} {
		if _, err := parseEquivalents("e.txt", bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestScoreAndEquivalents(t *testing.T) {
	ms := []mutant{
		{File: "a.go", Line: 1, Column: 1, Type: "ARITHMETIC_BASE", Status: killed},
		{File: "a.go", Line: 2, Column: 1, Type: "ARITHMETIC_BASE", Status: timedOut},
		{File: "a.go", Line: 3, Column: 1, Type: "ARITHMETIC_BASE", Status: lived},
		{File: "a.go", Line: 4, Column: 1, Type: "ARITHMETIC_BASE", Status: notCovered},
		{File: "a.go", Line: 5, Column: 1, Type: "ARITHMETIC_BASE", Status: notViable},
		{File: "a.go", Line: 6, Column: 1, Type: "ARITHMETIC_BASE", Status: lived},
	}
	stale := applyEquivalents(ms, equivalents{
		"a.go:3:1 ARITHMETIC_BASE": "same result",
		"a.go:1:1 ARITHMETIC_BASE": "killed anyway",
		"a.go:9:9 ARITHMETIC_BASE": "gone",
	})
	if ms[2].Status != equivalent || ms[2].Reason != "same result" || ms[0].Status != killed {
		t.Errorf("statuses after the equivalents: %+v", ms)
	}
	if len(stale) != 2 {
		t.Errorf("stale entries %q, want the killed one and the missing one", stale)
	}
	r := &result{Mutants: ms}
	// (killed 1 + timed out 1 + equivalent 1) / (6 - 1 not viable)
	if got := r.score(); got != 60 {
		t.Errorf("score %v, want 60", got)
	}
}

func TestFlags(t *testing.T) {
	t.Setenv("EXERCISES", "01-a, 02-b")
	opt, err := parseFlags([]string{"03-c"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(opt.exercises, " ") != "01-a 02-b 03-c" || opt.workers != 1 || opt.target != 90 {
		t.Errorf("options %+v", opt)
	}
	if _, err := parseFlags([]string{"--workers", "0"}, &bytes.Buffer{}); err == nil {
		t.Error("--workers 0: no error")
	}
}
