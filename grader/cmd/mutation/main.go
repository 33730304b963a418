// Command mutation runs mutation testing of every exercise's reference
// solution against its hidden tests (make mutation).
//
//	go run ./grader/cmd/mutation [--exercises "01-shared-storage 02-expandable"] [--workers 1] [--timeout-coefficient 5] [--target 90] [NN-name ...]
//
// For each exercise it lays out, in a temporary module, what grading
// compiles (grader/README.md): the exercise's non-test files, the reference
// student files from solutions/NN-name/ and the hidden tests, never the
// public tests. Then gremlins (github.com/go-gremlins/gremlins, pinned as a
// tool in go.mod) mutates only the student files, one operator at a time,
// and runs the hidden tests against each mutant. A mutant is killed when a
// hidden test fails, survives when they all pass.
//
// Two things gremlins gets wrong are corrected here:
//
//   - gremlins calls "not covered" any operator outside the blocks of Go's
//     coverage profile, and the profile leaves gaps: the condition after a
//     function literal on the same line (`if err := Try(func() {...});
//     err != nil`) is in no block. So every mutant gremlins does not run
//     is run here, with the same rewrite (the operator swapped in the
//     syntax tree, the file printed by go/printer); those the hidden tests
//     kill count as killed, the others stay "not covered".
//   - gremlins counts a mutant that does not compile (`a + "s"` as
//     `a - "s"`, `&x` as `|x`) as killed. Each mutant is type-checked here
//     (go/types, with the export data of `go list -export`); those that do
//     not type-check are "not viable" and left out of the score.
//
// A survivor that cannot change any observable result (an equivalent
// mutant) is listed in grader/hidden/NN-name/equivalent-mutants.txt, one
// line each, `file:line:col MUTATOR  reason`; it then counts in the
// "equivalent" column, as killed. An exercise scores
// (killed + timed out + equivalent) / (generated - not viable); below
// --target (90 %) the command exits 1. It prints one table row per
// exercise and every survivor, not-covered and timed-out mutant with its
// source line.
//
// The tests run on one thread (GOMAXPROCS=1, as grading runs them), built
// as grading builds them: CGO_ENABLED=0, offline (GOFLAGS=-mod=mod -vet=off
// GOPROXY=off GOWORK=off). Unlike grading, asynchronous preemption stays
// on: gremlins kills only the go command of a mutant that times out, and a
// test binary spinning without function calls on one thread with
// asynchronous preemption off never reaches its own -timeout, so it would
// spin on after gremlins moved on. Exit status: 0 when every exercise
// reaches the target, 1 when one does not or could not be run, 2 for a
// usage error.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/printer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

const (
	courseModule = "github.com/gpumem/course"
	gremlinsPkg  = "github.com/go-gremlins/gremlins/cmd/gremlins"
	gremlinsMod  = "github.com/go-gremlins/gremlins"
)

// mutators are gremlins' mutator types, all of them enabled: the five it
// enables by default and the six it does not (INVERT_LOGICAL swaps && and
// ||, INVERT_LOOPCTRL break and continue, INVERT_ASSIGNMENTS += and -=,
// REMOVE_SELF_ASSIGNMENTS makes x += y x = y, ...). The flag is the type's
// name in lower case with dashes.
var mutators = []string{
	"ARITHMETIC_BASE", "CONDITIONALS_BOUNDARY", "CONDITIONALS_NEGATION",
	"INCREMENT_DECREMENT", "INVERT_NEGATIVES",
	"INVERT_ASSIGNMENTS", "INVERT_BITWISE", "INVERT_BWASSIGN",
	"INVERT_LOGICAL", "INVERT_LOOPCTRL", "REMOVE_SELF_ASSIGNMENTS",
}

// gremlinsFlag is the unleash flag that enables a mutator type.
func gremlinsFlag(mutator string) string {
	if mutator == "INVERT_BWASSIGN" {
		return "invert-bwassign"
	}
	return strings.ToLower(strings.ReplaceAll(mutator, "_", "-"))
}

// swaps is gremlins' table of rewrites (internal/engine/mappings.go,
// v0.6.0): for each mutator type, what each operator becomes.
var swaps = map[string]map[token.Token]token.Token{
	"ARITHMETIC_BASE": {token.ADD: token.SUB, token.MUL: token.QUO, token.QUO: token.MUL,
		token.REM: token.MUL, token.SUB: token.ADD},
	"CONDITIONALS_BOUNDARY": {token.GEQ: token.GTR, token.GTR: token.GEQ, token.LEQ: token.LSS,
		token.LSS: token.LEQ},
	"CONDITIONALS_NEGATION": {token.EQL: token.NEQ, token.GEQ: token.LSS, token.GTR: token.LEQ,
		token.LEQ: token.GTR, token.LSS: token.GEQ, token.NEQ: token.EQL},
	"INCREMENT_DECREMENT": {token.DEC: token.INC, token.INC: token.DEC},
	"INVERT_ASSIGNMENTS": {token.ADD_ASSIGN: token.SUB_ASSIGN, token.MUL_ASSIGN: token.QUO_ASSIGN,
		token.QUO_ASSIGN: token.MUL_ASSIGN, token.REM_ASSIGN: token.REM_ASSIGN,
		token.SUB_ASSIGN: token.ADD_ASSIGN},
	"INVERT_BITWISE": {token.AND: token.OR, token.OR: token.AND, token.XOR: token.AND,
		token.AND_NOT: token.AND, token.SHL: token.SHR, token.SHR: token.SHL},
	"INVERT_BWASSIGN": {token.AND_ASSIGN: token.OR_ASSIGN, token.OR_ASSIGN: token.AND_ASSIGN,
		token.XOR_ASSIGN: token.AND_ASSIGN, token.AND_NOT_ASSIGN: token.AND_ASSIGN,
		token.SHL_ASSIGN: token.SHR_ASSIGN, token.SHR_ASSIGN: token.SHL_ASSIGN},
	"INVERT_LOGICAL":   {token.LAND: token.LOR, token.LOR: token.LAND},
	"INVERT_LOOPCTRL":  {token.BREAK: token.CONTINUE, token.CONTINUE: token.BREAK},
	"INVERT_NEGATIVES": {token.SUB: token.ADD},
	"REMOVE_SELF_ASSIGNMENTS": {token.ADD_ASSIGN: token.ASSIGN, token.AND_ASSIGN: token.ASSIGN,
		token.AND_NOT_ASSIGN: token.ASSIGN, token.MUL_ASSIGN: token.ASSIGN, token.OR_ASSIGN: token.ASSIGN,
		token.QUO_ASSIGN: token.ASSIGN, token.REM_ASSIGN: token.ASSIGN, token.SHL_ASSIGN: token.ASSIGN,
		token.SHR_ASSIGN: token.ASSIGN, token.SUB_ASSIGN: token.ASSIGN, token.XOR_ASSIGN: token.ASSIGN},
}

// Outcomes of a mutant, gremlins' statuses (LIVED is "survived") plus
// "equivalent".
const (
	killed     = "KILLED"
	lived      = "LIVED"
	timedOut   = "TIMED OUT"
	notCovered = "NOT COVERED"
	notViable  = "NOT VIABLE"
	equivalent = "EQUIVALENT"
)

// mutant is one mutation of a student file.
type mutant struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Type    string `json:"type"`
	Status  string `json:"status"`
	Gremlin string `json:"gremlins_status"` // what gremlins said, before the corrections
	Change  string `json:"change"`          // "< → <="
	Source  string `json:"source"`          // the line, trimmed
	Reason  string `json:"reason,omitempty"`
}

func (m mutant) key() string { return fmt.Sprintf("%s:%d:%d %s", m.File, m.Line, m.Column, m.Type) }

// result is one exercise's row.
type result struct {
	Exercise string        `json:"exercise"`
	Mutants  []mutant      `json:"mutants"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Err      string        `json:"error,omitempty"`
	Stale    []string      `json:"stale_equivalents,omitempty"`
}

func (r *result) count(status string) int {
	n := 0
	for _, m := range r.Mutants {
		if m.Status == status {
			n++
		}
	}
	return n
}

// score is (killed + timed out + equivalent) / (generated - not viable),
// in percent; 100 when no viable mutant was generated.
func (r *result) score() float64 {
	viable := len(r.Mutants) - r.count(notViable)
	if viable == 0 {
		return 100
	}
	return 100 * float64(r.count(killed)+r.count(timedOut)+r.count(equivalent)) / float64(viable)
}

type options struct {
	course      string
	exercises   []string
	workers     int
	coefficient int
	target      float64
	jsonOut     string
	keep        bool
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opt, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "mutation:", err)
		return 2
	}
	if opt.course == "" {
		wd, _ := os.Getwd()
		if opt.course, err = findCourse(wd); err != nil {
			fmt.Fprintln(stderr, "mutation:", err)
			return 1
		}
	}
	all, err := listExercises(opt.course)
	if err != nil {
		fmt.Fprintln(stderr, "mutation:", err)
		return 1
	}
	if len(opt.exercises) == 0 {
		opt.exercises = all
	}
	for _, ex := range opt.exercises {
		if !contains(all, ex) {
			fmt.Fprintf(stderr, "mutation: no exercise %q with hidden tests; there are: %s\n", ex, strings.Join(all, " "))
			return 2
		}
	}

	tmp, err := os.MkdirTemp("", "mutation-")
	if err != nil {
		fmt.Fprintln(stderr, "mutation:", err)
		return 1
	}
	if !opt.keep {
		defer os.RemoveAll(tmp)
	}
	start := time.Now()
	gremlins, version, err := buildGremlins(ctx, opt.course, tmp)
	if err != nil {
		fmt.Fprintln(stderr, "mutation:", err)
		return 1
	}
	fmt.Fprintf(stderr, "mutation: gremlins %s, %d exercise(s), %d worker(s), timeout coefficient %d\n",
		version, len(opt.exercises), opt.workers, opt.coefficient)

	var results []*result
	for _, ex := range opt.exercises {
		if ctx.Err() != nil {
			break
		}
		r := runExercise(ctx, opt, ex, gremlins, filepath.Join(tmp, ex), stderr)
		results = append(results, r)
		fmt.Fprintf(stderr, "mutation: %s: %d mutants, %.1f %% killed, %s\n",
			ex, len(r.Mutants), r.score(), r.Elapsed.Round(time.Second))
	}

	fmt.Fprintf(stdout, "Mutation testing, gremlins %s, %s, %s\n\n", version, time.Now().Format("2006-01-02"),
		time.Since(start).Round(time.Second))
	writeTable(stdout, results)
	writeMutants(stdout, results)
	if opt.jsonOut != "" {
		data, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(opt.jsonOut, append(data, '\n'), 0o644); err != nil {
			fmt.Fprintln(stderr, "mutation:", err)
			return 1
		}
	}

	code := 0
	for _, r := range results {
		switch {
		case r.Err != "":
			fmt.Fprintf(stdout, "FAIL %s: %s\n", r.Exercise, r.Err)
			code = 1
		case r.score() < opt.target:
			fmt.Fprintf(stdout, "FAIL %s: %.1f %% killed, below the target of %g %%\n", r.Exercise, r.score(), opt.target)
			code = 1
		}
	}
	if len(results) < len(opt.exercises) {
		fmt.Fprintln(stdout, "FAIL interrupted")
		code = 1
	}
	return code
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("mutation", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opt := options{}
	var exercises string
	fs.StringVar(&opt.course, "course", "", "the course root (default: found from the current folder)")
	fs.StringVar(&exercises, "exercises", os.Getenv("EXERCISES"), "exercises to run, separated by spaces or commas (default $EXERCISES, else all)")
	fs.IntVar(&opt.workers, "workers", 1, "mutants tested at once (gremlins --workers)")
	fs.IntVar(&opt.coefficient, "timeout-coefficient", 5, "a mutant's tests time out after this many times the reference's run")
	fs.Float64Var(&opt.target, "target", 90, "the percentage of mutants an exercise's hidden tests must kill")
	fs.StringVar(&opt.jsonOut, "json", "", "also write every mutant, as JSON, to this file")
	fs.BoolVar(&opt.keep, "keep", false, "keep the temporary modules (their folder is printed)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mutation [flags] [NN-name ...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return opt, err
	}
	opt.exercises = strings.FieldsFunc(exercises, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' })
	opt.exercises = append(opt.exercises, fs.Args()...)
	if opt.workers < 1 || opt.coefficient < 1 {
		return opt, usageError{"--workers and --timeout-coefficient must be at least 1"}
	}
	return opt, nil
}

// findCourse is the nearest folder up from dir whose go.mod declares the
// course's module.
func findCourse(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && modulePath(data) == courseModule {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no folder above %s has the go.mod of %s (use --course)", dir, courseModule)
		}
	}
}

func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// listExercises names the exercises that have hidden tests, in order.
func listExercises(course string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(course, "grader", "hidden"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(course, "grader", "hidden", e.Name(), "grade.json")); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// buildGremlins builds the gremlins pinned in the course's go.mod into dir
// and returns its path and version.
func buildGremlins(ctx context.Context, course, dir string) (string, string, error) {
	bin := filepath.Join(dir, "gremlins")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, gremlinsPkg)
	cmd.Dir = course
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building gremlins (go.mod's tool %s): %v\n%s", gremlinsPkg, err, out)
	}
	cmd = exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Version}}", gremlinsMod)
	cmd.Dir = course
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("go list -m %s: %v", gremlinsMod, err)
	}
	return bin, strings.TrimSpace(string(out)), nil
}

// spec is what mutation reads of grade.json (the grader's parser refuses
// unknown fields; this one needs two).
type spec struct {
	Package      string   `json:"package"`
	StudentFiles []string `json:"student_files"`
}

// env is the environment of every go command in a temporary module: the
// grader's build settings (offline, no cgo) and one thread for the tests
// (grader/README.md; asynchronous preemption stays on, above).
func env() []string {
	drop := map[string]bool{"GOFLAGS": true, "GOPROXY": true, "GOWORK": true, "GOSUMDB": true,
		"CGO_ENABLED": true, "GOMAXPROCS": true, "GODEBUG": true}
	var out []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			out = append(out, kv)
		}
	}
	return append(out, "GOFLAGS=-mod=mod -vet=off", "GOPROXY=off", "GOWORK=off", "GOSUMDB=off",
		"CGO_ENABLED=0", "GOMAXPROCS=1")
}

// layout writes the graded build of exercise ex into dir: a module
// grader.local/mutation (gremlins reads the module path from go.mod's first
// line) requiring the course through a replace, the course's go.sum, the
// exercise's non-test files, the reference student files and the hidden
// tests. It returns the spec and the exercise's given (non-student) files.
func layout(course, ex, dir string) (spec, []string, error) {
	var sp spec
	hidden := filepath.Join(course, "grader", "hidden", ex)
	data, err := os.ReadFile(filepath.Join(hidden, "grade.json"))
	if err != nil {
		return sp, nil, err
	}
	if err := json.Unmarshal(data, &sp); err != nil {
		return sp, nil, fmt.Errorf("grade.json: %v", err)
	}
	if len(sp.StudentFiles) == 0 {
		return sp, nil, errors.New("grade.json lists no student_files")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return sp, nil, err
	}
	gomod := fmt.Sprintf("module grader.local/mutation\n\ngo 1.26\n\nrequire %s v0.0.0\n\nreplace %s => %s\n",
		courseModule, courseModule, course)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return sp, nil, err
	}
	if err := copyFile(filepath.Join(course, "go.sum"), filepath.Join(dir, "go.sum")); err != nil {
		return sp, nil, err
	}
	var given []string
	exDir := filepath.Join(course, "exercises", ex)
	entries, err := os.ReadDir(exDir)
	if err != nil {
		return sp, nil, err
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || contains(sp.StudentFiles, name) {
			continue
		}
		given = append(given, name)
		if err := copyFile(filepath.Join(exDir, name), filepath.Join(dir, name)); err != nil {
			return sp, nil, err
		}
	}
	for _, name := range sp.StudentFiles {
		if err := copyFile(filepath.Join(course, "solutions", ex, name), filepath.Join(dir, name)); err != nil {
			return sp, nil, err
		}
	}
	tests, _ := filepath.Glob(filepath.Join(hidden, "*_test.go"))
	if len(tests) == 0 {
		return sp, nil, errors.New("no hidden tests")
	}
	for _, t := range tests {
		if err := copyFile(t, filepath.Join(dir, filepath.Base(t))); err != nil {
			return sp, nil, err
		}
	}
	return sp, given, nil
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

// gremlinsOutput is the part of gremlins' --output file that is read.
type gremlinsOutput struct {
	Files []struct {
		Name      string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

func runExercise(ctx context.Context, opt options, ex, gremlins, dir string, log io.Writer) *result {
	start := time.Now()
	r := &result{Exercise: ex}
	defer func() { r.Elapsed = time.Since(start) }()
	fail := func(format string, a ...any) *result {
		r.Err = fmt.Sprintf(format, a...)
		return r
	}
	sp, given, err := layout(opt.course, ex, dir)
	if err != nil {
		return fail("laying out the graded build: %v", err)
	}
	if opt.keep {
		fmt.Fprintf(log, "mutation: %s: module in %s\n", ex, dir)
	}

	// The reference must pass the hidden tests; the run also warms the
	// build cache and times the tests for the mutants gremlins does not run.
	t0 := time.Now()
	if out, status := goTest(ctx, dir, 0); status != lived {
		return fail("the reference does not pass the hidden tests (%s):\n%s", status, tail(out, 3000))
	}
	base := time.Since(t0)
	fmt.Fprintf(log, "mutation: %s: the reference passes the hidden tests in %s\n", ex, base.Round(100*time.Millisecond))

	// gremlins: mutate only the student files (every other .go file is
	// excluded by name; test files it never mutates).
	outFile := filepath.Join(dir, "..", ex+".gremlins.json")
	args := []string{"unleash", "--workers", fmt.Sprint(opt.workers),
		"--timeout-coefficient", fmt.Sprint(opt.coefficient), "--output", outFile}
	for _, m := range mutators {
		args = append(args, "--"+gremlinsFlag(m)+"=true")
	}
	for _, g := range given {
		args = append(args, "--exclude-files", "^"+regexp.QuoteMeta(g)+"$")
	}
	args = append(args, dir)
	cmd := exec.CommandContext(ctx, gremlins, args...)
	cmd.Dir = dir
	cmd.Env = env()
	inGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = 5 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				fmt.Fprintf(log, "  %s: %s\n", ex, line)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	err = cmd.Run()
	// A test binary whose go command gremlins killed for a timeout may
	// still run; it is in gremlins' process group.
	if cmd.Process != nil {
		killGroup(cmd)
	}
	pw.Close()
	<-done
	if err != nil {
		return fail("gremlins: %v", err)
	}
	data, err := os.ReadFile(outFile)
	if err != nil {
		return fail("gremlins wrote no results: %v", err)
	}
	var gout gremlinsOutput
	if err := json.Unmarshal(data, &gout); err != nil {
		return fail("gremlins' results: %v", err)
	}

	checker, err := newChecker(ctx, dir, sp.StudentFiles)
	if err != nil {
		return fail("type-checking setup: %v", err)
	}
	timeout := time.Duration(opt.coefficient) * base
	for _, f := range gout.Files {
		if !contains(sp.StudentFiles, f.Name) {
			return fail("gremlins mutated %s, which is not a student file", f.Name)
		}
		src, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			return fail("%v", err)
		}
		lines := strings.Split(string(src), "\n")
		for _, gm := range f.Mutations {
			m := mutant{File: f.Name, Line: gm.Line, Column: gm.Column, Type: gm.Type, Status: gm.Status, Gremlin: gm.Status}
			if gm.Line >= 1 && gm.Line <= len(lines) {
				m.Source = strings.TrimSpace(lines[gm.Line-1])
			}
			mutated, change, err := applyMutation(f.Name, src, m.Line, m.Column, m.Type)
			if err != nil {
				return fail("%s: %v", m.key(), err)
			}
			m.Change = change
			if bytes.Equal(mutated, src) {
				// INVERT_ASSIGNMENTS maps %= to itself (gremlins v0.6.0).
				m.Status, m.Reason = equivalent, "the mutator leaves the operator unchanged"
			} else if err := checker.check(f.Name, mutated); err != nil {
				m.Status = notViable
				m.Reason = firstLine(err.Error())
			} else if m.Status == notCovered {
				m.Status = runMutant(ctx, dir, f.Name, src, mutated, timeout)
				if m.Status != killed && m.Status != timedOut {
					m.Status = notCovered
				}
				fmt.Fprintf(log, "  %s: %s (gremlins: not covered) run here: %s\n", ex, m.key(), m.Status)
			}
			r.Mutants = append(r.Mutants, m)
		}
	}
	sort.SliceStable(r.Mutants, func(i, j int) bool {
		a, b := r.Mutants[i], r.Mutants[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})

	eq, err := readEquivalents(filepath.Join(opt.course, "grader", "hidden", ex, "equivalent-mutants.txt"))
	if err != nil {
		return fail("%v", err)
	}
	r.Stale = applyEquivalents(r.Mutants, eq)
	return r
}

// goTest runs the hidden tests in dir, as gremlins does (-failfast); a
// timeout of 0 means none. The status is killed (a test failed or the
// build did), lived (they passed) or timed out.
func goTest(ctx context.Context, dir string, timeout time.Duration) (string, string) {
	args := []string{"test", "-count=1", "-failfast"}
	if timeout > 0 {
		ctx2, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		ctx = ctx2
		args = append(args, "-timeout", (timeout + 2*time.Second).String())
	}
	cmd := exec.CommandContext(ctx, "go", append(args, ".")...)
	cmd.Dir = dir
	cmd.Env = env()
	inGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	switch {
	case timeout > 0 && ctx.Err() != nil:
		return string(out), timedOut
	case err != nil:
		return string(out), killed
	}
	return string(out), lived
}

// runMutant writes the mutated file, runs the hidden tests and puts the
// original back.
func runMutant(ctx context.Context, dir, file string, orig, mutated []byte, timeout time.Duration) string {
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, mutated, 0o644); err != nil {
		return notCovered
	}
	defer os.WriteFile(path, orig, 0o644)
	_, status := goTest(ctx, dir, timeout)
	return status
}

// applyMutation rewrites src as gremlins does: the operator at line:col,
// in the syntax tree, becomes what the mutator type makes of it, and the
// file is printed by go/printer. It returns the new source and the change
// ("< → <=").
func applyMutation(name string, src []byte, line, col int, typ string) ([]byte, string, error) {
	table, ok := swaps[typ]
	if !ok {
		return nil, "", fmt.Errorf("unknown mutator type %s", typ)
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, "", err
	}
	var tok *token.Token
	ast.Inspect(file, func(n ast.Node) bool {
		if tok != nil {
			return false
		}
		var t *token.Token
		var pos token.Pos
		switch n := n.(type) {
		case *ast.AssignStmt:
			t, pos = &n.Tok, n.TokPos
		case *ast.BinaryExpr:
			t, pos = &n.Op, n.OpPos
		case *ast.BranchStmt:
			t, pos = &n.Tok, n.TokPos
		case *ast.IncDecStmt:
			t, pos = &n.Tok, n.TokPos
		case *ast.UnaryExpr:
			t, pos = &n.Op, n.OpPos
		default:
			return true
		}
		if p := fset.Position(pos); p.Line == line && p.Column == col {
			if _, ok := table[*t]; ok {
				tok = t
			}
		}
		return true
	})
	if tok == nil {
		return nil, "", fmt.Errorf("no operator that %s mutates at %s:%d:%d", typ, name, line, col)
	}
	from := *tok
	*tok = table[from]
	var buf bytes.Buffer
	err = printer.Fprint(&buf, fset, file)
	*tok = from
	if err != nil {
		return nil, "", err
	}
	return buf.Bytes(), fmt.Sprintf("%s → %s", from, table[from]), nil
}

// checker type-checks the package's non-test files with one of them
// replaced, against the export data of its imports.
type checker struct {
	dir    string
	files  []string // non-test .go files of the package
	export map[string]string
}

func newChecker(ctx context.Context, dir string, studentFiles []string) (*checker, error) {
	c := &checker{dir: dir, export: map[string]string{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			c.files = append(c.files, n)
		}
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", ".")
	cmd.Dir = dir
	cmd.Env = env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %v\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(string(out), "\n") {
		if path, file, ok := strings.Cut(line, "\t"); ok && file != "" {
			c.export[path] = file
		}
	}
	// The reference itself must type-check, or every mutant would look
	// not viable.
	for _, f := range studentFiles {
		src, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		if err := c.check(f, src); err != nil {
			return nil, fmt.Errorf("the reference does not type-check here: %v", err)
		}
	}
	return c, nil
}

func (c *checker) check(name string, src []byte) error {
	fset := token.NewFileSet()
	var files []*ast.File
	for _, f := range c.files {
		var data any
		if f == name {
			data = src
		}
		file, err := parser.ParseFile(fset, filepath.Join(c.dir, f), data, 0)
		if err != nil {
			return err
		}
		files = append(files, file)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := c.export[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	conf := types.Config{Importer: imp, GoVersion: "go1.26"}
	_, err := conf.Check("grader.local/mutation", fset, files, nil)
	return err
}

// equivalents maps "file:line:col MUTATOR" to its reason.
type equivalents map[string]string

// readEquivalents reads an equivalent-mutants.txt: one survivor a line,
// `file:line:col MUTATOR  reason`; blank lines and lines starting with #
// are skipped. A missing file lists none.
func readEquivalents(path string) (equivalents, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return equivalents{}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseEquivalents(filepath.Base(path), string(data))
}

var positionRE = regexp.MustCompile(`^[^\s:]+\.go:\d+:\d+$`)

func parseEquivalents(name, text string) (equivalents, error) {
	eq := equivalents{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || !positionRE.MatchString(f[0]) || swaps[f[1]] == nil {
			return nil, fmt.Errorf("%s:%d: want `file.go:line:col MUTATOR  reason`, got %q", name, i+1, line)
		}
		key := f[0] + " " + f[1]
		if _, dup := eq[key]; dup {
			return nil, fmt.Errorf("%s:%d: %s is listed twice", name, i+1, key)
		}
		eq[key] = strings.Join(f[2:], " ")
	}
	return eq, nil
}

// applyEquivalents marks the listed survivors (survived or not covered)
// equivalent, and returns the entries that name no such mutant.
func applyEquivalents(ms []mutant, eq equivalents) []string {
	used := map[string]bool{}
	for i := range ms {
		m := &ms[i]
		reason, ok := eq[m.key()]
		if !ok {
			continue
		}
		used[m.key()] = true
		if m.Status == lived || m.Status == notCovered {
			m.Status, m.Reason = equivalent, reason
		}
	}
	var stale []string
	for k := range eq {
		if !used[k] {
			stale = append(stale, k+" (no such mutant)")
		}
	}
	for _, m := range ms {
		if used[m.key()] && m.Status != equivalent {
			stale = append(stale, fmt.Sprintf("%s (listed as equivalent, but %s)", m.key(), m.Status))
		}
	}
	sort.Strings(stale)
	return stale
}

var columns = []string{"exercise", "generated", "killed", "survived", "equivalent", "timed out", "not covered", "not viable", "% killed", "time"}

func row(r *result) []string {
	if r.Err != "" {
		return []string{r.Exercise, "error", "", "", "", "", "", "", "", r.Elapsed.Round(time.Second).String()}
	}
	return []string{r.Exercise, fmt.Sprint(len(r.Mutants)), fmt.Sprint(r.count(killed)), fmt.Sprint(r.count(lived)),
		fmt.Sprint(r.count(equivalent)), fmt.Sprint(r.count(timedOut)), fmt.Sprint(r.count(notCovered)),
		fmt.Sprint(r.count(notViable)), fmt.Sprintf("%.1f", r.score()), r.Elapsed.Round(time.Second).String()}
}

// writeTable prints a Markdown table, one row per exercise and a total.
func writeTable(w io.Writer, results []*result) {
	rows := [][]string{columns}
	total := &result{Exercise: "total"}
	for _, r := range results {
		rows = append(rows, row(r))
		if r.Err == "" {
			total.Mutants = append(total.Mutants, r.Mutants...)
		}
		total.Elapsed += r.Elapsed
	}
	if len(results) > 1 {
		rows = append(rows, row(total))
	}
	width := make([]int, len(columns))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i == 0 {
				fmt.Fprintf(&b, " %s%s |", c, pad)
			} else {
				fmt.Fprintf(&b, " %s%s |", pad, c)
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(rows[0])
	sep := make([]string, len(columns))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i]-1) + ":"
	}
	sep[0] = strings.Repeat("-", width[0])
	line(sep)
	for _, r := range rows[1:] {
		line(r)
	}
	fmt.Fprintln(w)
}

// writeMutants lists, per exercise, every mutant the hidden tests did not
// kill (survived, not covered, equivalent) and those that timed out.
func writeMutants(w io.Writer, results []*result) {
	for _, r := range results {
		var lines []string
		for _, m := range r.Mutants {
			var what string
			switch m.Status {
			case lived:
				what = "survived"
			case notCovered:
				what = "not covered"
			case timedOut:
				what = "timed out"
			case equivalent:
				what = "equivalent: " + m.Reason
			default:
				continue
			}
			lines = append(lines, fmt.Sprintf("  %s:%d:%d %s (%s) %s\n      %s", m.File, m.Line, m.Column, m.Type, m.Change, what, m.Source))
		}
		for _, s := range r.Stale {
			lines = append(lines, "  stale equivalent-mutants.txt entry: "+s)
		}
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s:\n%s\n\n", r.Exercise, strings.Join(lines, "\n"))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
