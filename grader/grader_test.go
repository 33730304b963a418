package grader

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpumem/course/grader/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixtureCourse copies testdata/course with the real course's go.mod and
// go.sum into a temporary folder (private to this user, as t.TempDir is)
// and returns it.
func fixtureCourse(t testing.TB) *Course {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS("testdata/course")))
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join("..", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(root, f), data, 0o644))
	}
	c, err := OpenCourse(root)
	require.NoError(t, err)
	return c
}

// The sandbox modes, as the tests name them.
const (
	SandboxAuto   = sandbox.ModeAuto
	SandboxLimits = sandbox.ModeLimits
)

func newGrader(t testing.TB, c *Course, mode sandbox.Mode) (*Grader, *strings.Builder) {
	t.Helper()
	var notices strings.Builder
	g, err := New(c, mode, &syncWriter{w: &notices})
	require.NoError(t, err)
	return g, &notices
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func TestFindCourse(t *testing.T) {
	c := fixtureCourse(t)
	found, err := FindCourse(filepath.Join(c.Root, "exercises", "01-toy"))
	require.NoError(t, err)
	assert.Equal(t, c.Root, found.Root)
	_, err = FindCourse(t.TempDir())
	assert.ErrorContains(t, err, "not inside the course")
	names, err := c.Exercises()
	require.NoError(t, err)
	assert.Equal(t, []string{"01-toy"}, names)
	_, err = c.Exercise("02-nothing")
	assert.ErrorContains(t, err, "the exercises are: 01-toy")
	_, err = c.Exercise("../etc")
	assert.ErrorContains(t, err, "not an exercise name")
}

func TestVerifyFixture(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxAuto)
	var out strings.Builder
	rep, err := g.Verify(context.Background(), nil, 1, &out)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Verified, out.String())
	assert.Empty(t, rep.Failed)
	assert.Contains(t, out.String(), "solution 7/7, extras 7/7 7/7, mutants 4/7 6/7 4/7, stub 0/7, 2 public tests")
	assert.Contains(t, out.String(), "1 of 1 exercises verified; 2 right answers with extras kept full marks, 3 mutants lost points (the references' and extras' tests and the tests a mutant failed ran 2 times)")
	assert.Equal(t, VerifyReport{Verified: 1, Extras: 2, Mutants: 3}, rep)
}

func TestVerifyFindsBrokenExercise(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	// A stub that already passes a test, and a solution that fails one.
	sol := filepath.Join(c.Root, "solutions", "01-toy", "reverse.go")
	broken := "package toy\n\nfunc Reverse(xs []int) error { return nil }\n"
	require.NoError(t, os.WriteFile(sol, []byte(broken), 0o644))
	// The mutant of the old reverse.go no longer applies: one of this one.
	writeFile(t, c.Root, "solutions/01-toy/mutants/reverse-stops-early.patch", replaceDiff("Mutant: one comment more.", "reverse.go", broken, broken+"// More.\n"))
	stub := filepath.Join(c.Root, "exercises", "01-toy", "sum.go")
	require.NoError(t, os.WriteFile(stub, []byte("package toy\n\nfunc Sum(xs []int) (int, error) { return 0, nil }\n"), 0o644))
	g, _ := newGrader(t, c, SandboxAuto)
	var out strings.Builder
	rep, err := g.Verify(context.Background(), []string{"01-toy"}, 1, &out)
	require.NoError(t, err)
	assert.Equal(t, 0, rep.Verified)
	text := strings.Join(rep.Failed, "\n")
	assert.Contains(t, text, "the solution fails TestReverse")
	assert.Contains(t, text, "the stub passes TestSumEmpty")
	assert.Contains(t, text, "the solution fails the public test TestReverseSample")

	// An exercise without hidden tests cannot be graded. (01-toy's are
	// gone too: what it does without them is the point, not grading
	// 01-toy's submissions again, which took most of this test's time.)
	require.NoError(t, os.CopyFS(filepath.Join(c.Root, "exercises", "02-more"), os.DirFS(filepath.Join(c.Root, "solutions", "01-toy"))))
	require.NoError(t, os.RemoveAll(filepath.Join(c.Root, "grader", "hidden", "01-toy")))
	out.Reset()
	rep, err = g.Verify(context.Background(), nil, 1, &out)
	require.NoError(t, err)
	assert.Equal(t, 0, rep.Verified)
	failed := strings.Join(rep.Failed, "\n")
	assert.Contains(t, failed, "01-toy: no hidden tests")
	assert.Contains(t, failed, "02-more: no hidden tests")
}

func TestVerifyStudentEdition(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	require.NoError(t, os.RemoveAll(filepath.Join(c.Root, "grader", "hidden")))
	g, _ := newGrader(t, c, SandboxLimits)
	var out strings.Builder
	rep, err := g.Verify(context.Background(), nil, 1, &out)
	require.NoError(t, err)
	assert.Equal(t, 0, rep.Verified)
	assert.Contains(t, out.String(), "0 exercises verified")
	// check still works without grade.json.
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	assert.Nil(t, ex.Spec)
	dir, err := overlay(t.TempDir(), ex.SolutionDir, []string{"sum.go", "reverse.go"}, ex.Dir)
	require.NoError(t, err)
	res, err := g.Check(context.Background(), ex, dir)
	require.NoError(t, err)
	assert.Len(t, res.Tests, 2)
	for _, tr := range res.Tests {
		assert.True(t, tr.Passed(), tr.Output)
	}
}

func TestCheckStub(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxLimits)
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	res, err := g.Check(context.Background(), ex, "")
	require.NoError(t, err)
	require.Len(t, res.Tests, 2)
	var text strings.Builder
	require.NoError(t, res.WriteText(&text, "check"))
	assert.Contains(t, text.String(), "✗ TestSumSample")
	assert.Contains(t, text.String(), "Sum(sample()) = 0, not implemented yet; want 14, nil")
	assert.Contains(t, text.String(), "0 of 2 public tests pass.")
}

// hostileCase is a submission in testdata/hostile: its sum.go (if any)
// with the solution's reverse.go, and the points each test must earn.
type hostileCase struct {
	name     string
	points   map[string]int // TestSum, TestSumEmpty, TestReverse
	feedback string         // in the submission's output or a failing test's
	limits   bool           // also graded without bubblewrap
}

var onlyReverse = map[string]int{"TestSum": 0, "TestSumEmpty": 0, "TestReverse": 3}
var nothing = map[string]int{"TestSum": 0, "TestSumEmpty": 0, "TestReverse": 0}

// hostileCases are graded with the fixture's allowlist widened to the
// packages they need (wideImports): they attack the layers below it (the
// verdict, the sandbox, the build, the feedback), which must hold on their
// own. TestAllowlistRefusesHostile checks that the real allowlist refuses
// every one of them that needs more than an exercise allows.
var hostileCases = []hostileCase{
	{"fake-pass", onlyReverse, "actual  : -1", false},
	{"exit0-init", nothing, "exited with status 0 before the test ran", true},
	{"exit0-midtest", onlyReverse, "os.Exit(0)", false},
	{"flag-redirect", nothing, "test flags were changed", false},
	{"flag-skip", nothing, "test flags were changed", false},
	{"testmain", onlyReverse, "your package declares a name the grader uses", false},
	{"syscall-exit", onlyReverse, "", false},
	{"infinite-loop", onlyReverse, "did not finish within 3s", false},
	{"fork-bomb", onlyReverse, "", false},
	{"alloc-20g", onlyReverse, "out of memory", true},
	{"fill-disk", onlyReverse, "", false},
	{"read-hidden", onlyReverse, "", true},
	{"panic-init", nothing, "boom at init", false},
	{"compile-error", onlyReverse, "undefined: totalOf", false},
	{"missing-file", onlyReverse, "sum.go is missing from the submission", false},
	{"wrong-package", onlyReverse, "declares package main; the exercise's package is toy", false},
	{"output-flood", onlyReverse, "printed more than", false},
	{"goexit", onlyReverse, "", false},
	{"reflect-memory", onlyReverse, `imports "reflect": uses a package this exercise does not allow`, true},
	{"proc-mem", onlyReverse, "", true},
	{"escapes", onlyReverse, "✓ TestSum 3/3", false},
	{"self-import", onlyReverse, `imports "grader.local/submission/toy": uses a package this exercise does not allow`, false},
	{"line-import", onlyReverse, "", false},
	{"name-clash", onlyReverse, "your package declares a name the grader uses", false},
	{"hidden-helper", onlyReverse, "undefined: tallyOfTheHiddenTests", false},
	{"signature", nothing, "the grader's tests do not compile with your code", false},
	// The attacks of issue 32, each of which gave the plain stub full
	// marks (or leaked the hidden tests) through a TestMain that trusted
	// m.Run, the exit status and flags it checked one by one. Sum is right
	// in gomaxprocs and test-cpu: a process the code changed earns
	// nothing, whatever it computes.
	{"fuzzworker", nothing, "test flags were changed", true},
	{"gomaxprocs", nothing, "(GOMAXPROCS)", false},
	{"test-cpu", nothing, "test flags were changed", false},
	{"flag-set-race", nothing, "test flags were changed", true},
	{"flag-set", map[string]int{"TestSum": 0, "TestSumEmpty": 0, "TestReverse": -1}, "", true}, // Reverse is right: whether its test ran first is a race
	{"rerun-exe", onlyReverse, "grader: this test binary runs only under the grader", true},
	{"tty-shm", onlyReverse, "", true},
}

// wideImports widen the fixture's allowlist for hostileCases.
var wideImports = append([]string{"bufio", "flag", "io", "os", "os/exec", "path/filepath", "runtime", "strconv", "syscall", "testing"}, DefaultImports...)

// widenAllowlist rewrites the fixture's grade.json to allow imports.
func widenAllowlist(t testing.TB, c *Course, imports []string) {
	t.Helper()
	path := filepath.Join(c.Root, "grader", "hidden", "01-toy", "grade.json")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var spec map[string]any
	require.NoError(t, json.Unmarshal(data, &spec))
	spec["imports"] = imports
	data, err = json.Marshal(spec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// hostileSubmissions lays the cases out as a batch: one folder per case.
func hostileSubmissions(t *testing.T, c *Course, cases []hostileCase) string {
	t.Helper()
	dir := t.TempDir()
	reverse, err := os.ReadFile(filepath.Join(c.Root, "solutions", "01-toy", "reverse.go"))
	require.NoError(t, err)
	hidden := filepath.Join(c.Root, "grader", "hidden", "01-toy")
	for _, hc := range cases {
		sub := filepath.Join(dir, hc.name)
		require.NoError(t, os.CopyFS(sub, os.DirFS(filepath.Join("testdata", "hostile", hc.name))))
		if data, err := os.ReadFile(filepath.Join(sub, "sum.go")); err == nil {
			data = []byte(strings.ReplaceAll(string(data), "HIDDEN_DIR", hidden))
			require.NoError(t, os.WriteFile(filepath.Join(sub, "sum.go"), data, 0o644))
		}
		require.NoError(t, os.WriteFile(filepath.Join(sub, "reverse.go"), reverse, 0o644))
	}
	return dir
}

func TestHostileSubmissions(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	widenAllowlist(t, c, wideImports)
	g, notices := newGrader(t, c, SandboxAuto)
	if !g.Sandbox.Namespaced() {
		// Without bubblewrap an endless writer fills the real disk until
		// the timeout: run only what is safe there.
		t.Logf("bubblewrap unusable here: %s", notices)
		runHostile(t, g, c, limitsCases())
		return
	}
	runHostile(t, g, c, hostileCases)
	t.Logf("sandbox: %s; notices: %q", g.Sandbox.Describe(), notices.String())
}

func TestHostileSubmissionsWithoutBubblewrap(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("short")
	}
	c := fixtureCourse(t)
	widenAllowlist(t, c, wideImports)
	g, _ := newGrader(t, c, SandboxLimits)
	runHostile(t, g, c, limitsCases())
	// What a test left in the machine's shared folders went with it.
	for _, f := range []string{"/dev/shm/gpumem-left-behind", "/tmp/gpumem-left-behind"} {
		if os.Geteuid() == 0 {
			assert.NoFileExists(t, f)
		}
	}
}

// The allowlist refuses, before anything is built, every hostile
// submission that needs a package an exercise does not allow (all but
// those that attack with plain Go: fake output, endless loops, huge
// allocations, compiler bombs, name clashes); those graded in full under
// the real allowlist earn nothing for Sum and see the list.
func TestAllowlistRefusesHostile(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir("testdata/hostile")
	require.NoError(t, err)
	var refused []string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("testdata", "hostile", e.Name(), "sum.go"))
		if err != nil {
			continue
		}
		if why := checkStudentFile("sum.go", data, "toy", policyFor(nil)); strings.Contains(why, notAllowed) {
			refused = append(refused, e.Name())
		}
	}
	// goexit and gomaxprocs import runtime, which runtime.GC makes
	// importable: the type check refuses their runtime.Goexit and
	// runtime.GOMAXPROCS (graded below and in TestPolicyUses).
	assert.ElementsMatch(t, []string{"busy-children", "exit0-init", "exit0-midtest", "fill-disk", "flag-redirect", "flag-set-race",
		"flag-set", "flag-skip", "fork-bomb", "fuzzworker", "line-import", "proc-mem", "read-hidden", "reflect-memory",
		"rerun-exe", "self-import", "syscall-exit", "test-cpu", "testmain", "tty-shm"}, refused)

	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxAuto)
	var cases []hostileCase
	for _, name := range []string{"fuzzworker", "gomaxprocs", "flag-set-race", "rerun-exe", "busy-children", "goexit"} {
		cases = append(cases, hostileCase{name, onlyReverse, notAllowed + " (allowed: bytes, encoding/binary, errors, fmt, " + ModulePath + "/gpukit/..., math", false})
	}
	runHostile(t, g, c, cases)
}

// limitsCases are the hostile cases run without namespaces too: the rest
// (endless loops, a fork bomb, disk filling) are bounded there only by the
// timeout and rlimits, which the bubblewrap run checks as well.
func limitsCases() []hostileCase {
	var cases []hostileCase
	for _, hc := range hostileCases {
		if hc.limits {
			cases = append(cases, hc)
		}
	}
	return cases
}

func runHostile(t *testing.T, g *Grader, c *Course, cases []hostileCase) {
	t.Helper()
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	subs := hostileSubmissions(t, c, cases)
	feedback := t.TempDir()
	csvPath := filepath.Join(t.TempDir(), "grades.csv")
	sum, err := g.Batch(context.Background(), ex, subs, BatchOptions{Jobs: 2, CSV: csvPath, FeedbackDir: feedback})
	require.NoError(t, err)
	assert.Equal(t, len(cases), sum.Graded)

	f, err := os.Open(csvPath)
	require.NoError(t, err)
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	header := records[0]
	col := map[string]int{}
	for i, h := range header {
		col[strings.SplitN(h, " (max ", 2)[0]] = i // "TestSum (max 3)"
	}
	rows := map[string][]string{}
	for _, r := range records[1:] {
		rows[r[0]] = r
	}
	for _, hc := range cases {
		row, ok := rows[hc.name]
		if !assert.True(t, ok, "%s: no row", hc.name) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(feedback, hc.name+".json"))
		require.NoError(t, err)
		var results GradescopeResults
		require.NoError(t, json.Unmarshal(data, &results))
		text := results.Output
		for _, tr := range results.Tests {
			text += "\n" + tr.Output
		}
		if dump := os.Getenv("GRADER_DUMP_FEEDBACK"); dump != "" {
			os.WriteFile(filepath.Join(dump, hc.name+".txt"), []byte(text), 0o644)
		}
		for test, want := range hc.points {
			if want >= 0 { // -1: either
				assert.Equal(t, want, atoi(row[col[test]]), "%s: %s\n%s", hc.name, test, text)
			}
		}
		if hc.feedback != "" {
			assert.Contains(t, text, hc.feedback, hc.name)
		}
		// Nothing a terminal obeys reaches the feedback.
		for _, r := range text {
			ok := r == '\n' || r == '\t' || r >= 0x20 && r != 0x7f && (r < 0x80 || r > 0x9f) && (r < 0x202a || r > 0x202e)
			assert.True(t, ok, "%s: control character %U in the feedback", hc.name, r)
		}
		// The hidden tests' source never reaches the feedback.
		assert.NotContains(t, text, "secretMarkerOfTheHiddenTests", hc.name)
		assert.NotContains(t, text, "func TestSumEmpty", hc.name)
		// Nor a hidden file's name or line, nor a name only they declare
		// (unless the submission itself wrote it).
		assert.NotContains(t, text, "hidden_test.go", hc.name)
		if sum, _ := os.ReadFile(filepath.Join(subs, hc.name, "sum.go")); !strings.Contains(string(sum), "tallyOfTheHiddenTests") {
			assert.NotContains(t, text, "tallyOfTheHiddenTests", hc.name)
		}
	}
	if os.Geteuid() == 0 {
		// Every uid that no grader holds now has no process left; a uid
		// another grader on this machine holds is its business.
		left, err := sandbox.Leftovers()
		require.NoError(t, err)
		for uid, n := range left {
			assert.Zero(t, n, "processes of uid %d outlived grading", uid)
		}
	}
	for _, pattern := range []string{"grader-run-*/fill-*", "grader-*/bin/fill-*"} {
		left, _ := filepath.Glob(filepath.Join(sandbox.TempBase(), pattern))
		assert.Empty(t, left, "files of fill-disk outlived grading")
	}
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}

func TestBatchResumes(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxAuto)
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	subs := hostileSubmissions(t, c, []hostileCase{{name: "missing-file"}, {name: "compile-error"}})
	csvPath := filepath.Join(t.TempDir(), "grades.csv")
	sum, err := g.Batch(context.Background(), ex, subs, BatchOptions{Jobs: 2, CSV: csvPath})
	require.NoError(t, err)
	assert.Equal(t, BatchSummary{Graded: 2}, sum)
	info, err := os.Stat(csvPath)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the gradebook is private")
	data, err := os.ReadFile(csvPath)
	require.NoError(t, err)
	assert.Equal(t, "student,score,max_score,percent,TestSum (max 3),TestSumEmpty (max 1),TestReverse (max 3),status,seconds\n", strings.SplitAfter(string(data), "\n")[0])

	// A new student arrives; the two graded ones are skipped.
	require.NoError(t, os.CopyFS(filepath.Join(subs, "late"), os.DirFS(filepath.Join(c.Root, "solutions", "01-toy"))))
	var progress strings.Builder
	sum, err = g.Batch(context.Background(), ex, subs, BatchOptions{Jobs: 1, CSV: csvPath, Progress: &progress})
	require.NoError(t, err)
	assert.Equal(t, BatchSummary{Graded: 1, Skipped: 2}, sum)
	assert.Contains(t, progress.String(), "batch: 1/1 late 7/7")
	assert.Contains(t, progress.String(), "batch: skipped 2 students already in "+csvPath+" (compile-error, missing-file); --regrade grades them again")
	data, err = os.ReadFile(csvPath)
	require.NoError(t, err)
	assert.Contains(t, string(data), "\nlate,7,7,100.0,3,1,3,graded,")

	// --regrade grades everyone again.
	progress.Reset()
	sum, err = g.Batch(context.Background(), ex, subs, BatchOptions{Jobs: 2, CSV: csvPath, Regrade: true, Progress: &progress})
	require.NoError(t, err)
	assert.Equal(t, BatchSummary{Graded: 3}, sum)
	assert.NotContains(t, progress.String(), "skipped")

	// A grades file of another exercise is refused, not overwritten.
	require.NoError(t, os.WriteFile(csvPath, []byte("student,score\n"), 0o644))
	_, err = g.Batch(context.Background(), ex, subs, BatchOptions{CSV: csvPath})
	assert.ErrorContains(t, err, "written for other tests")
}

// TestBatchShards: shard i of n grades the students whose position in byte
// order is i modulo n; together the shards grade every student once.
func TestBatchShards(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxAuto)
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	subs := hostileSubmissions(t, c, []hostileCase{{name: "missing-file"}, {name: "compile-error"}})
	require.NoError(t, os.CopyFS(filepath.Join(subs, "b-late"), os.DirFS(filepath.Join(c.Root, "solutions", "01-toy"))))
	students := map[string]int{}
	for i := range 2 {
		csvPath := filepath.Join(t.TempDir(), "grades.csv")
		_, err := g.Batch(context.Background(), ex, subs, BatchOptions{Jobs: 1, CSV: csvPath, Shard: i, Shards: 2})
		require.NoError(t, err)
		f, err := os.Open(csvPath)
		require.NoError(t, err)
		records, err := csv.NewReader(f).ReadAll()
		f.Close()
		require.NoError(t, err)
		for _, r := range records[1:] {
			students[r[0]]++
		}
	}
	// Byte order: b-late, compile-error, missing-file.
	assert.Equal(t, map[string]int{"b-late": 1, "compile-error": 1, "missing-file": 1}, students)

	_, err = g.Batch(context.Background(), ex, subs, BatchOptions{CSV: filepath.Join(t.TempDir(), "g.csv"), Shard: 2, Shards: 2})
	assert.ErrorContains(t, err, "shard 2 is out of range")
	// A shard with no student is not an error: the class is smaller than the Job.
	sum, err := g.Batch(context.Background(), ex, subs, BatchOptions{CSV: filepath.Join(t.TempDir(), "g.csv"), Shard: 5, Shards: 8})
	require.NoError(t, err)
	assert.Equal(t, BatchSummary{}, sum)
}

func TestRelease(t *testing.T) {
	c := fixtureCourse(t)
	out := filepath.Join(t.TempDir(), "student")
	n, err := c.Release(out)
	require.NoError(t, err)
	assert.Greater(t, n, 5)
	assert.FileExists(t, filepath.Join(out, "exercises", "01-toy", "sum.go"))
	assert.FileExists(t, filepath.Join(out, "go.mod"))
	assert.NoDirExists(t, filepath.Join(out, "solutions"))
	assert.NoDirExists(t, filepath.Join(out, "grader", "hidden"))
	_, err = c.Release(out)
	assert.ErrorContains(t, err, "not empty")
	_, err = c.Release(filepath.Join(c.Root, "inside"))
	assert.ErrorContains(t, err, "inside the course")
	// A symlink that leads into the course, or a path through one.
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(filepath.Join(c.Root, "exercises"), link))
	for _, p := range []string{link, filepath.Join(link, "new", "student")} {
		_, err = c.Release(p)
		assert.ErrorContains(t, err, "inside the course", p)
	}
	assert.NoDirExists(t, filepath.Join(c.Root, "exercises", "new"))
}

// TestReleaseTrackedOnly: in a git checkout the student edition holds what
// the course declares (tracked files), never what the instructor left
// beside it (a gradebook, feedback, a class folder).
func TestReleaseTrackedOnly(t *testing.T) {
	c := fixtureCourse(t)
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = c.Root
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "course")
	require.NoError(t, os.WriteFile(filepath.Join(c.Root, "grades.csv"), []byte("student,score\nada,10\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(c.Root, "feedback"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(c.Root, "feedback", "ada.json"), []byte("{}"), 0o644))
	out := filepath.Join(t.TempDir(), "student")
	_, err := c.Release(out)
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(out, "exercises", "01-toy", "sum.go"))
	assert.NoFileExists(t, filepath.Join(out, "grades.csv"))
	assert.NoDirExists(t, filepath.Join(out, "feedback"))
}

func TestRedactor(t *testing.T) {
	original := "package toy\n\nfunc helperOfH() {\n\tsecret := \"a long distinctive line of the hidden test\"\n}\n\nfunc TestH(t *testing.T) {}\n"
	r := newRedactor("toy", &hiddenTests{
		original: []source{{"h_test.go", []byte(original)}},
		files:    []source{{"h_test.go", []byte(strings.ReplaceAll(original, "helperOfH", "hidden_0123_helperOfH"))}},
		prefix:   "hidden_0123_",
	})
	got := r.clean("ok\nfound: secret := \"a long distinctive line of the hidden test\" here\n}\n/tmp/x/grader-123/mod/toy/h_test.go:3: boom\n" +
		"toy.hidden_0123_helperOfH(...)\n\th_test.go:4 +0x1d\ntoy.TestH(0xc000)\n\tzz_grader_main_0123abcd_test.go:12\n" +
		"got a toy.(*hidden_0123_config) and a hidden_0123_config{n:1}; toy.helperOfH is the student's; x_hidden_0123_y\n" +
		"toy.Sum(...)\n\tgrader.local/submission/toy/sum.go:5 +0x2\n\tgrader.local/submission/toy/h_test.go:9 +0x3")
	assert.Equal(t, "ok\n[a line quoting the hidden tests was removed]\n}\n[hidden test]: boom\n"+
		"[hidden](...)\n\t[hidden test] +0x1d\ntoy.TestH(0xc000)\n\t[hidden test]\n"+
		"got a [hidden]) and a [hidden]{n:1}; toy.helperOfH is the student's; x_[hidden]\n"+
		"toy.Sum(...)\n\ttoy/sum.go:5 +0x2\n\t[hidden test] +0x3", got)

	// A graded test's name is public and keeps its name: declaring it is
	// the one clash left.
	msgs := r.compilerMessages("sum.go:3:6: TestH redeclared in this block\n\th_test.go:7:6: other declaration of TestH\n"+
		"h_test.go:7:6: TestH redeclared in this block\n\tsum.go:3:6: other declaration of TestH\n"+
		"sum.go:9:2: undefined: x\nh_test.go:7:9: not enough arguments in call to Sum\n\thave ()\n\twant ([]int)\nh_test.go:8:9: undefined: Total", []string{"sum.go"})
	assert.Equal(t, "sum.go:3:6: your package declares a name the grader uses; rename it\nsum.go:9:2: undefined: x\n"+
		"the grader's tests do not compile with your code: keep the names and signatures of the exercise's stub, and do not declare names of your own that the grader's files use", msgs)
}

func TestTestLog(t *testing.T) {
	out := "\x16=== RUN   TestA\nhello\n    a_test.go:3: bad\n\x16--- FAIL: TestA (0.00s)\n--- PASS: TestA (0.00s)\n\x16FAIL\npanic: test timed out after 3s"
	// However the output is cut into pieces, it reads the same.
	for _, size := range []int{1, 7, len(out)} {
		l := newTestLog("TestA")
		for s := out; s != ""; s = s[min(size, len(s)):] {
			l.Write([]byte(s[:min(size, len(s))]))
		}
		l.Close()
		assert.True(t, l.ran)
		assert.False(t, l.passed, "an unmarked PASS line is output, not an event")
		assert.Equal(t, "hello\n    a_test.go:3: bad\n", l.text.String())
		assert.Equal(t, "--- PASS: TestA (0.00s)\npanic: test timed out after 3s", l.outside.String())
		assert.True(t, l.saw(msgTimedOut))
		assert.False(t, l.saw(msgExit0))
	}
}

func TestHeadTail(t *testing.T) {
	h := headTail{keep: 16}
	h.Write([]byte("abc\ndefgh\n"))
	assert.Equal(t, "abc\ndefgh\n", h.String())
	h.Write([]byte("123456789\nijklmnopqr\nxyz\n"))
	// Only whole lines are kept on each side of the cut.
	assert.Equal(t, "abc\n[... 27 bytes cut ...]\nxyz\n", h.String())
}

// A test printing as much as it may costs the grader little memory and
// time: the output is parsed as it comes and only a bounded part kept.
func BenchmarkTestLogFlood(b *testing.B) {
	line := []byte("\x16=== RUN   TestA\n" + strings.Repeat("flood flood flood flood flood flood flood\n", 100))
	b.SetBytes(4 << 20)
	b.ReportAllocs()
	for b.Loop() {
		l := newTestLog("TestA")
		for n := 0; n < 4<<20; n += len(line) {
			l.Write(line)
		}
		l.Close()
	}
}

func TestCheckStudentFile(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"package toy\nfunc F() {}\n", ""},
		{"package toy\nimport \"fmt\"\nvar _ = fmt.Sprint\n", ""},
		{"package other\n", "declares package other"},
		{"package toy\nimport \"github.com/gpumem/course/gpukit/tensor\"\nvar _ = tensor.New\n", ""},
		{"package toy\nimport \"runtime\"\nfunc F() { runtime.GC() }\n", ""}, // for runtime.GC; the type check refuses the rest
		{"package toy\nimport \"unsafe\"\n", `imports "unsafe": uses a package this exercise does not allow (allowed: bytes, encoding/binary,`},
		{"package toy\nimport \"os\"\n", `imports "os": uses a package this exercise does not allow`},
		{"package toy\nimport \"flag\"\n", `imports "flag"`},
		{"package toy\nimport \"os/exec\"\n", `imports "os/exec"`},
		{"package toy\nimport \"io\"\n", `imports "io"`},
		{"package toy\nimport \"C\"\n", `imports "C"`},
		{"package toy\nimport \"golang.org/x/sys/unix\"\n", `imports "golang.org/x/sys/unix"`},
		{"package toy\nimport \"github.com/gpumem/course/internal/atomicfile\"\n", `imports "github.com/gpumem/course/internal/atomicfile"`},
		{"package toy\nimport _ \"embed\"\n//go:embed x\nvar s string\n", `imports "embed"`},
		{"package toy\n//go:linkname f runtime.f\nfunc f()\n", `the directive "//go:linkname" (line 2)`},
		{"package toy\n//go:noinline\nfunc f() {}\n", `"//go:noinline"`},
		{"package toy\nfunc f() {\n\t//go:nosplit\n}\n", `"//go:nosplit" (line 3)`},
		{"//go:build ignore\n\npackage toy\n", "//go:build"},
		{"// +build ignore\n\npackage toy\n", "+build"},
		{"package toy\n//line other.go:1\nfunc f() {}\n", "//line"},
		{"package toy\nfunc f() { /*line other.go:1*/ }\n", "/*line"},
		{"package toy\nimport \"fmt\nfunc F() {}\n", "does not parse"},
	} {
		got := checkStudentFile("f.go", []byte(tc.src), "toy", policyFor(nil))
		if tc.want == "" {
			assert.Empty(t, got, tc.src)
		} else {
			assert.Contains(t, got, tc.want, tc.src)
		}
	}
}

// The type check refuses every object and every type of a package the
// exercise does not allow, however the code reached it: through a value
// another package hands out (reflect.Type in a json error), a method of
// such a value, a generic instantiated with it; and the gpukit functions
// that open paths (refusedAPI).
func TestPolicyUses(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxLimits)
	given, err := os.ReadFile(filepath.Join(c.Root, "exercises", "01-toy", "given.go"))
	require.NoError(t, err)
	withJSON := policyFor(&Spec{Imports: append([]string{"encoding/json"}, DefaultImports...)})
	for _, tc := range []struct {
		allow     policy
		src, want string
	}{
		{policyFor(nil), "package toy\n\nimport \"fmt\"\n\nfunc Sum(xs []int) (int, error) { return len(fmt.Sprint(xs)), nil }\n", ""},
		{policyFor(nil), "package toy\n\nimport \"runtime\"\n\nfunc Sum(xs []int) (int, error) { runtime.GC(); runtime.KeepAlive(xs); return 0, nil }\n", ""},
		{policyFor(nil), "package toy\n\nimport \"runtime\"\n\nfunc Sum(xs []int) (int, error) { return runtime.GOMAXPROCS(4), nil }\n", "uses runtime.GOMAXPROCS (line 5): uses a package this exercise does not allow"},
		{policyFor(nil), "package toy\n\nimport \"slices\"\n\nfunc Sum(xs []int) (int, error) { return len(slices.Clone(xs)), nil }\n", ""},
		{policyFor(nil), "package toy\n\nimport \"time\"\n\nfunc Sum(xs []int) (int, error) { return len(time.Now().Location().String()) * 0, nil }\n", ""},
		{withJSON, `package toy

import "encoding/json"

func Sum(xs []int) (int, error) {
	var n int
	err := json.Unmarshal([]byte("\"x\""), &n)
	if e, ok := err.(*json.UnmarshalTypeError); ok {
		if e.Type.Method(0).Func.UnsafePointer() != nil {
			return 1, nil
		}
	}
	return 0, nil
}
`, "(line 9): uses a package this exercise does not allow"},
		{withJSON, `package toy

import "encoding/json"

func Sum(xs []int) (int, error) {
	var e json.UnmarshalTypeError
	f := e.Type
	_ = f
	return 0, nil
}
`, "reflect.Type"},
		// A type of a package that is not allowed, handed out by one that
		// is, is refused; so is a generic instantiated with it.
		{withJSON, `package toy

import "encoding/json"

func Sum(xs []int) (int, error) {
	d := json.NewDecoder(nil)
	_ = d.Buffered()
	return 0, nil
}
`, "io.Reader"},
	} {
		problems, err := g.builder().policyUses(context.Background(), tc.allow, "toy",
			[]source{{"given.go", given}, {"sum.go", []byte(tc.src)}}, []string{"sum.go"})
		require.NoError(t, err)
		if tc.want == "" {
			assert.Empty(t, problems, tc.src)
		} else {
			assert.Contains(t, problems["sum.go"], tc.want, tc.src)
		}
	}
}

func TestStripControl(t *testing.T) {
	assert.Equal(t, "a\tb\n✓ é[2K", stripControl("a\tb\r\n\x1b✓ é\u009b\x7f\u202e[2K\x00"))
}

// Folder names that a spreadsheet would run as formulas, or that a CSV
// reader would read back otherwise, are each one row, graded once.
func TestBatchOddNames(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxAuto)
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	subs := t.TempDir()
	names := []string{`=HYPERLINK("https:x","y")`, "+1", "a\r\nb", "'@x"}
	for _, n := range names {
		// An empty folder: graded as the stub, nothing is built.
		require.NoError(t, os.Mkdir(filepath.Join(subs, n), 0o755))
	}
	csvPath := filepath.Join(t.TempDir(), "grades.csv")
	for run, want := range []BatchSummary{{Graded: 4}, {Skipped: 4}} {
		sum, err := g.Batch(context.Background(), ex, subs, BatchOptions{Jobs: 2, CSV: csvPath})
		require.NoError(t, err)
		assert.Equal(t, want, sum, "run %d", run)
	}
	f, err := os.Open(csvPath)
	require.NoError(t, err)
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Len(t, records, 1+len(names))
	var got []string
	for _, r := range records[1:] {
		assert.NotContains(t, "=+-@", r[0][:1], "a formula cell: %q", r[0])
		got = append(got, fromCSVName(r[0]))
	}
	assert.ElementsMatch(t, names, got)
}

func TestCSVName(t *testing.T) {
	for _, name := range []string{"alice", "", "=1+1", "-", "'", "''x", `"q"`, `'"q"`, "a\r\nb", "\tx", "é\x7f", `'"a\r"`} {
		assert.Equal(t, name, fromCSVName(csvName(name)), "%q → %q", name, csvName(name))
	}
	assert.Equal(t, "'=1+1", csvName("=1+1"))
}

// A submission printing nearly the 4 MiB a test may print, in short lines,
// in every test: the grader reads it as it comes and keeps a bounded part,
// so what it allocates stays far below the output's size (it once held
// the whole output several times over and matched every line against
// every line of the hidden tests).
func TestOutputCostsLittle(t *testing.T) {
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxAuto)
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	// What is measured is memory, not time: 01-toy's 3 s per test is too
	// little for 4 MiB of lines under -race on a loaded machine (a CI run
	// once scored it 0 for a timeout).
	ex.Spec.TimeoutSeconds = 60
	subs := hostileSubmissions(t, c, []hostileCase{{name: "output-4mib"}})
	// TotalAlloc counts the whole process: whatever an earlier test left
	// running (a reaper, a pipe being drained) adds to one measurement
	// (a CI run once read 53 MiB where the grading alone takes 32), never
	// takes away, so the least of three gradings is the one compared.
	allocated := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, err := g.Grade(context.Background(), ex, filepath.Join(subs, "output-4mib"))
		require.NoError(t, err)
		runtime.ReadMemStats(&after)
		require.Equal(t, 3, res.Score, "%+v", res)
		assert.Contains(t, res.Tests[0].Output, "bytes cut")
		allocated = min(allocated, after.TotalAlloc-before.TotalAlloc)
	}
	t.Logf("grading 2 tests printing 4 MiB each allocated %d MiB (the least of three gradings)", allocated>>20)
	assert.Less(t, allocated, uint64(48<<20)) // about 200 MiB when it kept and copied the whole output
}

// Compiling is limited too: a few lines of doubling constants would drive
// the compiler to terabytes. A build past its limits does not compile: a
// grade of zero, not the grader's failure.
func TestCompilerLimits(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxAuto)
	g.Build = BuildLimits{Memory: 1 << 30, Time: 2 * time.Minute}
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	subs := hostileSubmissions(t, c, []hostileCase{{name: "compiler-bomb"}})
	start := time.Now()
	res, err := g.Grade(context.Background(), ex, filepath.Join(subs, "compiler-bomb"))
	require.NoError(t, err)
	assert.Equal(t, "compile_error", res.Status, res.Output)
	assert.Zero(t, res.Score)
	assert.Contains(t, res.Output, "the compiler went past its limits (1024 MiB")
	t.Logf("refused in %s: %s", time.Since(start).Round(time.Millisecond), res.Output)
}

// TestGradeStrictUmask: an instructor who grades with umask 077 (to keep
// the gradebook private) still gets real scores. As root, tests run as
// other uids, which must reach the test binary's folder whatever the umask.
// Not parallel: the umask is the whole process's.
func TestGradeStrictUmask(t *testing.T) {
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxAuto)
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	sub := filepath.Join(t.TempDir(), "ada")
	require.NoError(t, os.CopyFS(sub, os.DirFS(filepath.Join(c.Root, "solutions", "01-toy"))))
	old := umask(0o077)
	defer umask(old)
	res, err := g.Grade(context.Background(), ex, sub)
	require.NoError(t, err)
	assert.Equal(t, res.MaxScore, res.Score, "%+v", res.Tests)
}

// A 512 MiB array constant compiles into a 512 MiB package: the build's
// file-size limit stops it, and nothing of it stays in the grader's build
// cache, however often it is graded (it once left 512 MiB each time).
func TestBuildCacheKeepsNoHugePackage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the grader's own build cache is root's")
	}
	t.Parallel()
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxAuto)
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	cache, err := buildCache()
	require.NoError(t, err)
	subs := hostileSubmissions(t, c, []hostileCase{{name: "const-512mib"}})
	before := dirSize(cache)
	for range 2 {
		res, err := g.Grade(context.Background(), ex, filepath.Join(subs, "const-512mib"))
		require.NoError(t, err)
		// Past the build's limits, the package does not compile (as a
		// compiler bomb does not).
		assert.Equal(t, "compile_error", res.Status)
		assert.Contains(t, res.Output, "the compiler went past its limits")
	}
	grew := dirSize(cache) - before
	t.Logf("the build cache grew by %d MiB", grew>>20)
	assert.Less(t, grew, int64(64<<20))
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// Only the files the spec names reach the build: other sources of the
// submission (a helper file, assembly) are named in the feedback, and a
// right answer beside them keeps full marks.
func TestOtherFilesNamedNotCompiled(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxAuto)
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	sub := filepath.Join(t.TempDir(), "ada")
	for _, f := range []string{"sum.go", "reverse.go"} {
		data, err := os.ReadFile(filepath.Join(c.Root, "solutions", "01-toy", f))
		require.NoError(t, err)
		writeFile(t, sub, f, string(data))
	}
	writeFile(t, sub, "helper.go", "package toy\n\nimport \"os\"\n\nfunc init() { os.Exit(0) }\n")
	writeFile(t, sub, "asm/exit_amd64.s", "TEXT ·exit(SB),0,$0\n")
	writeFile(t, sub, "README.txt", "my notes\n")
	writeFile(t, sub, "toy_test.go", "package toy\n") // the exercise's own: not named
	res, err := g.Grade(context.Background(), ex, sub)
	require.NoError(t, err)
	assert.Equal(t, res.MaxScore, res.Score, "%s\n%+v", res.Output, res.Tests)
	assert.Contains(t, res.Output, "these files of the submission were not compiled: asm/exit_amd64.s, helper.go")
	assert.NotContains(t, res.Output, "README.txt")
}

func TestStudentPaths(t *testing.T) {
	cases := []struct{ msg, want string }{
		{"fragment/fragment.go:25:2: undefined: x", "exercises/02-fragmentation/fragment.go:25:2: undefined: x"},
		{"# ex/fragment\nfragment/fragment.go:3:1: syntax error\n  vet: fragment/fragment_test.go:9:2: y",
			"# ex/fragment\nexercises/02-fragmentation/fragment.go:3:1: syntax error\n  vet: exercises/02-fragmentation/fragment_test.go:9:2: y"},
		{"otherfragment/fragment.go:1:1: z", "otherfragment/fragment.go:1:1: z"},
		{"(fragment/a.go:1:2)", "(exercises/02-fragmentation/a.go:1:2)"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, studentPaths(c.msg, "fragment", "exercises/02-fragmentation"))
	}
}

func TestStuckAt(t *testing.T) {
	dump := `panic: test timed out after 3s
	running tests:
		TestLoop (3s)

goroutine 7 [running]:
reuse.Step(0xc000012345, 0x10)
	reuse/loop.go:12 +0x1a5
reuse.Train(...)
	reuse/loop.go:30
reuse.TestLoop(0xc0000a2000)
	[hidden test] +0x29a
testing.tRunner(0xc0000a2000, 0x5a3b10)
	testing/testing.go:1934 +0xea
created by testing.(*T).Run in goroutine 1
	testing/testing.go:1997 +0x465

goroutine 1 [chan receive]:
github.com/gpumem/course/gpukit/tensor.(*Tensor).Sum(0xc0000b4000)
	github.com/gpumem/course/gpukit/tensor/reduce.go:40 +0x1d
reuse.Step(0xc000012345, 0x10)
	reuse/loop.go:12 +0x1a5
`
	assert.Equal(t, []string{"loop.go:12 in Step", "loop.go:30 in Train"}, stuckAt(dump, "reuse"))
	assert.Empty(t, stuckAt(dump, "testing"+"x"))
	assert.Empty(t, stuckAt("--- FAIL: TestX\n    x_test.go:3: bad\n", "reuse"))
	assert.Equal(t, "before\n", beforeDump("before\npanic: test timed out after 3s\ngoroutine 1"))
}
