package collect

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const studentUID, studentGID = 54321, 54321

// newHome makes a home owned by a made-up student, with
// course/exercises/01-x/ in it. It needs root (chown).
func newHome(t *testing.T) (Student, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("collect's tests give files to another uid: they need root")
	}
	home := filepath.Join(t.TempDir(), "alice")
	dir := filepath.Join(home, "course", "exercises", "01-x")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	for _, p := range []string{home, filepath.Join(home, "course"), filepath.Join(home, "course", "exercises"), dir} {
		require.NoError(t, os.Chown(p, studentUID, studentGID))
	}
	return Student{Name: "alice", UID: studentUID, GID: studentGID, Home: home}, dir
}

func writeAs(t *testing.T, path, data string, uid int) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
	require.NoError(t, os.Chown(path, uid, studentGID))
}

func TestReadRefusesWhatIsNotAPlainFileOfTheStudent(t *testing.T) {
	const rel = "course/exercises/01-x/copy.go"
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("root's secret"), 0o600))
	cases := []struct {
		name  string
		plant func(t *testing.T, home, dir string)
		want  string // "" for a read that succeeds with "package x"
	}{
		{"a plain file", func(t *testing.T, home, dir string) {
			writeAs(t, filepath.Join(dir, "copy.go"), "package x", studentUID)
		}, ""},
		{"missing", func(t *testing.T, home, dir string) {}, "is missing"},
		{"a link to root's file", func(t *testing.T, home, dir string) {
			require.NoError(t, os.Symlink(secret, filepath.Join(dir, "copy.go")))
		}, "a symbolic link, not a regular file"},
		{"a FIFO", func(t *testing.T, home, dir string) {
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "copy.go"), 0o600))
		}, "a FIFO (named pipe), not a regular file"},
		{"a folder", func(t *testing.T, home, dir string) {
			require.NoError(t, os.Mkdir(filepath.Join(dir, "copy.go"), 0o700))
		}, "a folder, not a regular file"},
		{"someone else's file", func(t *testing.T, home, dir string) {
			writeAs(t, filepath.Join(dir, "copy.go"), "package x", studentUID+1)
		}, "is not your file"},
		{"a hard link", func(t *testing.T, home, dir string) {
			writeAs(t, filepath.Join(home, "other.go"), "package x", studentUID)
			require.NoError(t, os.Link(filepath.Join(home, "other.go"), filepath.Join(dir, "copy.go")))
		}, "2 hard links"},
		{"too large", func(t *testing.T, home, dir string) {
			writeAs(t, filepath.Join(dir, "copy.go"), strings.Repeat("x", MaxBytes+1), studentUID)
		}, "at most 1048576 are read"},
		{"a linked folder", func(t *testing.T, home, dir string) {
			other := filepath.Join(home, "elsewhere")
			require.NoError(t, os.Mkdir(other, 0o700))
			require.NoError(t, os.Chown(other, studentUID, studentGID))
			writeAs(t, filepath.Join(other, "copy.go"), "package x", studentUID)
			require.NoError(t, os.RemoveAll(dir))
			require.NoError(t, os.Symlink(other, dir))
		}, "01-x is a symbolic link or not a folder"},
		{"a folder of root's", func(t *testing.T, home, dir string) {
			require.NoError(t, os.Chown(dir, 0, 0))
			writeAs(t, filepath.Join(dir, "copy.go"), "package x", studentUID)
		}, "the folder 01-x is not yours"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, dir := newHome(t)
			c.plant(t, st.Home, dir)
			start := time.Now()
			data, err := Read(st, rel)
			assert.Less(t, time.Since(start), 5*time.Second, "a read must not wait")
			if c.want == "" {
				require.NoError(t, err)
				assert.Equal(t, "package x", string(data))
				return
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrRefused), "%v is the submission's fault", err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, string(data), "secret")
		})
	}
}

func TestReadRefusesAHomeThatIsNotTheStudents(t *testing.T) {
	st, _ := newHome(t)
	require.NoError(t, os.Chown(st.Home, 0, 0))
	_, err := Read(st, "course/exercises/01-x/copy.go")
	require.ErrorContains(t, err, "belongs to uid 0")
	assert.False(t, errors.Is(err, ErrRefused), "the home's owner is the class's set-up, not the submission")
}

func TestWriteReplacesALinkAndCreatesTheStudentsFolders(t *testing.T) {
	st, _ := newHome(t)
	target := filepath.Join(t.TempDir(), "etc-passwd")
	require.NoError(t, os.WriteFile(target, []byte("root:x:0:0"), 0o644))
	fb := filepath.Join(st.Home, "course", "feedback")
	require.NoError(t, os.Mkdir(fb, 0o700))
	require.NoError(t, os.Chown(fb, studentUID, studentGID))
	require.NoError(t, os.Symlink(target, filepath.Join(fb, "01-x.json")))
	writeAs(t, filepath.Join(fb, ".01-x.json.tmp-dead"), "stale", studentUID)

	require.NoError(t, Write(st, "course/feedback/01-x.json", []byte(`{"score":1}`)))
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "root:x:0:0", string(got), "the link's target is untouched")
	info, err := os.Lstat(filepath.Join(fb, "01-x.json"))
	require.NoError(t, err)
	assert.True(t, info.Mode().IsRegular())
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	assert.Equal(t, uint32(studentUID), info.Sys().(*syscall.Stat_t).Uid)
	_, err = os.Lstat(filepath.Join(fb, ".01-x.json.tmp-dead"))
	assert.True(t, os.IsNotExist(err), "the stale temporary is gone")

	require.NoError(t, Write(st, "course/new/deeper/f.json", []byte("{}")))
	for _, d := range []string{"course/new", "course/new/deeper"} {
		info, err := os.Stat(filepath.Join(st.Home, d))
		require.NoError(t, err)
		assert.Equal(t, uint32(studentUID), info.Sys().(*syscall.Stat_t).Uid, d)
	}
}

func TestWriteRefusesALinkedFolder(t *testing.T) {
	st, _ := newHome(t)
	elsewhere := t.TempDir() // root's
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(st.Home, "course", "feedback")))
	err := Write(st, "course/feedback/01-x.json", []byte("{}"))
	require.ErrorContains(t, err, "feedback is a symbolic link or not a folder")
	entries, _ := os.ReadDir(elsewhere)
	assert.Empty(t, entries, "nothing is written through the link")
}

func TestWithDeadlineGivesUp(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	err := withDeadline(50*time.Millisecond, "reading copy.go", func() error { <-block; return nil })
	require.ErrorIs(t, err, ErrRefused)
	assert.Contains(t, err.Error(), "did not finish within 50ms")
}

func TestRelativePathsOnly(t *testing.T) {
	st := Student{Name: "alice", UID: studentUID, Home: t.TempDir()}
	for _, rel := range []string{"", "/etc/passwd", "course/../../etc", "a//b", "./a"} {
		_, err := Read(st, rel)
		assert.ErrorContains(t, err, "collect: ", rel)
		assert.Error(t, Write(st, rel, nil), rel)
	}
}
