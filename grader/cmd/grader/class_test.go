//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/course/grader/collect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCollectAndHandBack runs collect and handback as grade-class.sh does,
// for a class of three: alice submits, bob put a FIFO where copy.go goes
// (once, `cat` as bob blocked the whole class's grading), and carol's
// feedback folder is a link to a folder of root's.
func TestCollectAndHandBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("collect and handback give files to other uids: they need root")
	}
	homes := t.TempDir()
	rootsDir := t.TempDir()
	accounts := map[string]collect.Student{}
	for i, name := range []string{"alice", "bob", "carol"} {
		st := collect.Student{Name: name, UID: 61000 + i, GID: 61000 + i, Home: filepath.Join(homes, name)}
		dir := filepath.Join(st.Home, "course", "exercises", "01-strided-copy")
		require.NoError(t, os.MkdirAll(dir, 0o700))
		require.NoError(t, filepath.Walk(st.Home, func(p string, _ os.FileInfo, err error) error {
			require.NoError(t, err)
			return os.Chown(p, st.UID, st.GID)
		}))
		for _, f := range []string{"copy.go"} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("package strided\n"), 0o600))
			require.NoError(t, os.Chown(filepath.Join(dir, f), st.UID, st.GID))
		}
		accounts[name] = st
	}
	bobSum := filepath.Join(homes, "bob", "course", "exercises", "01-strided-copy", "copy.go")
	require.NoError(t, os.Remove(bobSum))
	require.NoError(t, syscall.Mkfifo(bobSum, 0o600))
	require.NoError(t, os.Symlink(rootsDir, filepath.Join(homes, "carol", "course", "feedback")))
	old := lookupStudent
	lookupStudent = func(name string) (collect.Student, error) {
		if st, ok := accounts[name]; ok {
			return st, nil
		}
		return collect.Student{}, fmt.Errorf("collect: no account %q", name)
	}
	t.Cleanup(func() { lookupStudent = old })

	course := courseRoot
	subs := filepath.Join(t.TempDir(), "submissions")
	var out, errb bytes.Buffer
	start := time.Now()
	code := run(context.Background(), []string{"collect", "--course", course, "--exercise", "01-strided-copy", "--out", subs, "alice", "bob", "carol"}, &out, &errb)
	require.Equal(t, 0, code, "%s%s", out.String(), errb.String())
	assert.Less(t, time.Since(start), 10*time.Second, "a FIFO must not hold up the class")
	assert.Contains(t, out.String(), "bob: could not read your submission: course/exercises/01-strided-copy/copy.go is a FIFO (named pipe), not a regular file")
	assert.Contains(t, out.String(), "3 students, 1 with a file that could not be read")
	for _, f := range []string{"alice/copy.go", "carol/copy.go"} {
		assert.FileExists(t, filepath.Join(subs, f))
	}
	assert.NoFileExists(t, filepath.Join(subs, "bob", "copy.go"))

	// batch's feedback, made up here: handback only moves it.
	fb := t.TempDir()
	for _, name := range []string{"alice", "bob", "carol"} {
		require.NoError(t, os.WriteFile(filepath.Join(fb, name+".json"), []byte(`{"score":3,"output":"graded","tests":[]}`), 0o600))
	}
	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"handback", "--course", course, "--exercise", "01-strided-copy", "--feedback", fb, "--submissions", subs, "alice", "bob", "carol"}, &out, &errb)
	require.Equal(t, 0, code, "%s%s", out.String(), errb.String())
	assert.Contains(t, out.String(), "feedback handed to 2 students")
	assert.Contains(t, errb.String(), "could not hand carol their feedback")
	entries, _ := os.ReadDir(rootsDir)
	assert.Empty(t, entries, "nothing was written through carol's link")

	var bob map[string]any
	data, err := os.ReadFile(filepath.Join(homes, "bob", "course", "feedback", "01-strided-copy.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &bob))
	assert.Equal(t, "could not read your submission: course/exercises/01-strided-copy/copy.go is a FIFO (named pipe), not a regular file\n\ngraded", bob["output"])
	info, err := os.Stat(filepath.Join(homes, "alice", "course", "feedback", "01-strided-copy.json"))
	require.NoError(t, err)
	assert.Equal(t, uint32(61000), info.Sys().(*syscall.Stat_t).Uid)
}

func TestClassCommandsRefuseOddNames(t *testing.T) {
	var out, errb bytes.Buffer
	course := courseRoot
	for _, name := range []string{"../etc", "Alice", "a/b", ".notes"} {
		code := run(context.Background(), []string{"collect", "--course", course, "--exercise", "01-strided-copy", "--out", t.TempDir(), name}, &out, &errb)
		assert.Equal(t, 2, code, name)
	}
	assert.Contains(t, errb.String(), "is not an account name of the class")
}
