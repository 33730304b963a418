//go:build unix

package atomicfile

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A symlinked destination keeps its link: the target gets the new bytes.
func TestWriteFollowsSymlinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real", "model.safetensors")
	require.NoError(t, os.Mkdir(filepath.Dir(target), 0o755))
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o600))
	link := filepath.Join(dir, "latest")
	require.NoError(t, os.Symlink("real/model.safetensors", link))
	chain := filepath.Join(dir, "chain")
	require.NoError(t, os.Symlink(link, chain))

	require.NoError(t, WriteFile(chain, []byte("new"), 0o644))
	info, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, info.Mode()&os.ModeSymlink, "the link is still a link")
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))
	info, err = os.Stat(target)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the target keeps its mode")

	dangling := filepath.Join(dir, "dangling")
	require.NoError(t, os.Symlink("real/fresh.bin", dangling))
	require.NoError(t, WriteFile(dangling, []byte("x"), 0o644))
	got, err = os.ReadFile(filepath.Join(dir, "real", "fresh.bin"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(got), "a dangling link's target is created")

	loop := filepath.Join(dir, "loop")
	require.NoError(t, os.Symlink("loop", loop))
	assert.ErrorContains(t, WriteFile(loop, nil, 0o644), "too many levels of symbolic links")
}

// What is not a regular file is refused, never replaced.
func TestWriteRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	viaLink := filepath.Join(dir, "to-fifo")
	require.NoError(t, os.Symlink(fifo, viaLink))
	tests := []struct{ path, want string }{
		{fifo, "is not a regular file (a FIFO)"},
		{viaLink, "(through symbolic links, " + fifo + ") is not a regular file (a FIFO)"},
		{"/dev/null", "/dev/null is not a regular file (a character device)"},
		{dir, "is a directory"},
	}
	for _, tc := range tests {
		assert.ErrorContains(t, WriteFile(tc.path, []byte("x"), 0o644), tc.want)
		assert.ErrorContains(t, CheckWritable(tc.path), tc.want)
	}
	info, err := os.Lstat(fifo)
	require.NoError(t, err)
	assert.NotZero(t, info.Mode()&os.ModeNamedPipe, "the FIFO is still a FIFO")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file is left")
}

// A writer killed with SIGKILL mid-save leaves its temporary file; the
// next save in that directory removes it, but never one a live writer
// holds.
func TestKilledWriterLeavesNothingForLong(t *testing.T) {
	if dir := os.Getenv("ATOMICFILE_HELPER_DIR"); dir != "" {
		_ = Write(filepath.Join(dir, "big.bin"), 0o644, func(w io.Writer) error {
			w.Write([]byte("half a file"))
			os.WriteFile(filepath.Join(dir, "started"), nil, 0o644)
			select {} // killed here
		})
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterLeavesNothingForLong$")
	cmd.Env = append(os.Environ(), "ATOMICFILE_HELPER_DIR="+dir)
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the helper did not start writing")
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	stray := temporaries(t, dir)
	require.Len(t, stray, 1, "the killed writer left its temporary file")

	// A live writer's temporary, locked and old, stays.
	live, err := os.CreateTemp(dir, ".other.*"+tmpSuffix)
	require.NoError(t, err)
	defer live.Close()
	require.NoError(t, lock(live))
	old := time.Now().Add(-2 * staleAfter)
	for _, p := range append(stray, live.Name()) {
		require.NoError(t, os.Chtimes(p, old, old))
	}
	fresh, err := os.CreateTemp(dir, ".young.*"+tmpSuffix) // unlocked but new: may be a writer about to lock it
	require.NoError(t, err)
	fresh.Close()

	require.NoError(t, WriteFile(filepath.Join(dir, "next.bin"), []byte("ok"), 0o644))
	assert.ElementsMatch(t, []string{live.Name(), fresh.Name()}, temporaries(t, dir))
}

func temporaries(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), tmpSuffix) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}
