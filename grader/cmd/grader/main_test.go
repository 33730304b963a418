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
