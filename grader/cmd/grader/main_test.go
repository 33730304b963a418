package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in           string
		index, count int
		ok           bool
	}{
		{"", 0, 1, true},
		{"0/8", 0, 8, true},
		{"7/8", 7, 8, true},
		{"8/8", 0, 0, false},
		{"-1/8", 0, 0, false},
		{"0/0", 0, 0, false},
		{"3", 0, 0, false},
		{"a/b", 0, 0, false},
	} {
		index, count, err := parseShard(tc.in)
		if !tc.ok {
			var u errUsage
			assert.ErrorAs(t, err, &u, tc.in)
			continue
		}
		assert.NoError(t, err, tc.in)
		assert.Equal(t, [2]int{tc.index, tc.count}, [2]int{index, count}, tc.in)
	}
}

func TestExerciseArg(t *testing.T) {
	root, err := filepath.Abs(courseRoot)
	require.NoError(t, err)
	ex := filepath.Join(root, "exercises", "02-fragmentation")
	cases := []struct {
		cwd, arg, want, err string
	}{
		{root, "02-fragmentation", "02-fragmentation", ""},
		{root, "exercises/02-fragmentation/", "02-fragmentation", ""},
		{root, "exercises/02-fragmentation/fragment.go", "02-fragmentation", ""},
		{ex, "", "02-fragmentation", ""},
		{ex, ".", "02-fragmentation", ""},
		{ex, "fragment.go", "02-fragmentation", ""},
		{filepath.Join(root, "exercises"), "02-fragmentation", "02-fragmentation", ""},
		{root, "", "", "run it inside an exercise's folder, or name one"},
		{root, "gpukit/alloc", "", "gpukit/alloc is not an exercise"},
	}
	for _, c := range cases {
		t.Run(c.arg+"@"+filepath.Base(c.cwd), func(t *testing.T) {
			t.Chdir(c.cwd)
			var pos []string
			if c.arg != "" {
				pos = []string{c.arg}
			}
			got, err := exerciseArg(&common{}, pos)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestHelpPrintsUsageOnce(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	old := os.Stderr
	os.Stderr = w
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"check", "-h"}, &out, &errb)
	os.Stderr = old
	w.Close()
	printed, _ := io.ReadAll(r)
	assert.Equal(t, 0, code)
	assert.Equal(t, 1, strings.Count(string(printed), "usage: grader check"), string(printed))
	assert.Contains(t, string(printed), "-strict", "with the flags")
}

func TestChangedGivenFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	dir := filepath.Join(repo, "exercises", "02-x")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, f := range []string{"x.go", "x_test.go", "given.go"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("package x\n"), 0o644))
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "course")
	assert.Empty(t, changedGivenFiles(dir, []string{"x.go"}))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.go"), []byte("package x\n// mine\n"), 0o644))
	assert.Empty(t, changedGivenFiles(dir, []string{"x.go"}), "the student's own file is theirs to change")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x_test.go"), []byte("package x\n// loosened\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "given.go"), []byte("package x\n// edited\n"), 0o644))
	assert.Equal(t, []string{"given.go", "x_test.go"}, changedGivenFiles(dir, []string{"x.go"}))
	assert.Empty(t, changedGivenFiles(t.TempDir(), nil), "not a git checkout: nothing to say")
}

// Off Linux, grade, batch and verify run others' code with no sandbox:
// refused unless --sandbox none is given; check is never refused.
func TestOSGate(t *testing.T) {
	for _, tc := range []struct {
		goos, command, sandbox string
		refused                bool
	}{
		{"linux", "grade", "auto", false},
		{"linux", "verify", "bwrap", false},
		{"darwin", "grade", "auto", true},
		{"darwin", "batch", "limits", true},
		{"windows", "verify", "bwrap", true},
		{"darwin", "grade", "none", false},
		{"windows", "batch", "none", false},
		{"freebsd", "verify", "auto", true},
	} {
		err := osGate(tc.goos, tc.command, tc.sandbox)
		if !tc.refused {
			assert.NoError(t, err, "%+v", tc)
			continue
		}
		var u errUsage
		require.ErrorAs(t, err, &u, "%+v", tc)
		assert.Contains(t, u.msg, tc.command+" runs other people's code", "%+v", tc)
		assert.Contains(t, u.msg, "this is "+tc.goos, "%+v", tc)
		assert.Contains(t, u.msg, "--sandbox none", "%+v", tc)
	}
}

// The gate as the command line meets it: exit status 2 and one line that
// starts with "grader: ", before anything is opened; --sandbox none goes
// on to the command (here, to an exercise that does not exist).
func TestOSGateCommands(t *testing.T) {
	old := hostOS
	hostOS = "darwin"
	t.Cleanup(func() { hostOS = old })
	for _, args := range [][]string{
		{"grade", "--exercise", "01-shared-storage", "--submission", t.TempDir()},
		{"batch", "--exercise", "01-shared-storage", "--submissions", t.TempDir(), "--out", filepath.Join(t.TempDir(), "g.csv")},
		{"verify", "01-shared-storage"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, &out, &errb)
		assert.Equal(t, 2, code, "%v: %s", args, errb.String())
		assert.Regexp(t, `^grader: `+args[0]+` runs other people's code, and its sandbox needs Linux \(this is darwin\)`, errb.String())
		assert.Equal(t, 1, strings.Count(errb.String(), "\n"), errb.String())
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"verify", "--course", courseRoot, "--sandbox", "none", "99-no-such"}, &out, &errb)
	assert.NotContains(t, errb.String(), "sandbox needs Linux")
	assert.NotEqual(t, 0, code, errb.String())
}

// check --all checks several exercises at once and still prints one line
// per exercise in the exercises' order, each with its own result: here
// three copies of the fixture's toy exercise, the middle one solved.
func TestCheckAllInOrder(t *testing.T) {
	root, fixture := toyCourse(t)
	for _, f := range []string{"sum.go", "reverse.go"} {
		data, err := os.ReadFile(filepath.Join(fixture, "solutions", "01-toy", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(root, "exercises", "02-toy", f), data, 0o644))
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"check", "--all", "--course", root}, &out, &errb)
	require.Equal(t, 0, code, "%s%s", out.String(), errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 5, out.String())
	assert.Regexp(t, `^  ✗ 01-toy +0/\d+ public tests pass$`, lines[1])
	assert.Regexp(t, `^  ✓ 02-toy +(\d+)/\d+ public tests pass$`, lines[2])
	assert.Regexp(t, `^  ✗ 03-toy +0/\d+ public tests pass$`, lines[3])
	assert.Equal(t, "1 of 3 exercises pass all their public tests; grading also runs hidden tests (see each README).", lines[4])
}

// When one exercise cannot be checked, check --all says why and returns
// only after the checks running beside it have stopped and removed their
// builds' folders: here 03-toy has no public tests, and 04-toy's, which
// start when 03-toy's check ends, are still running (one sleeps) when
// 02-toy's check ends.
func TestCheckAllStopsCleanly(t *testing.T) {
	root, _ := toyCourse(t, "04-toy")
	require.NoError(t, os.Remove(filepath.Join(root, "exercises", "03-toy", "toy_test.go")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "exercises", "04-toy", "slow_test.go"),
		[]byte("package toy\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestSlow(t *testing.T) { time.Sleep(2 * time.Second) }\n"), 0o644))
	// The builds' folders go to TMPDIR (which root's grader needs open to
	// the sandbox's uids: 0711).
	tmp, err := os.MkdirTemp("", "checkall-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	require.NoError(t, os.Chmod(tmp, 0o711))
	t.Setenv("TMPDIR", tmp)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"check", "--all", "--course", root}, &out, &errb)
	assert.Equal(t, 1, code, "%s%s", out.String(), errb.String())
	assert.Contains(t, errb.String(), "has no public tests")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	assert.Empty(t, names, "left in TMPDIR after check --all returned")
}

// toyCourse is the grader's fixture course with its toy exercise copied
// as 02-toy, 03-toy and the more exercises named, and the course's go.mod
// and go.sum; it returns the course's folder and the fixture's.
func toyCourse(t *testing.T, more ...string) (root, fixture string) {
	t.Helper()
	root = t.TempDir()
	fixture = filepath.Join("..", "..", "testdata", "course")
	require.NoError(t, os.CopyFS(root, os.DirFS(fixture)))
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(courseRoot, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(root, f), data, 0o644))
	}
	toy := os.DirFS(filepath.Join(fixture, "exercises", "01-toy"))
	for _, name := range append([]string{"02-toy", "03-toy"}, more...) {
		require.NoError(t, os.CopyFS(filepath.Join(root, "exercises", name), toy))
	}
	return root, fixture
}
