package grader

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// After a build, the grader removes the large entries it wrote to the
// build cache, reading only the cache's folders the build changed: the
// go command creates each entry in one of 256 folders, which changes that
// folder's time. A large file in a folder untouched since the build
// started is older than the build (the go command rewrites no entry in
// place); it stays, as does every small or older one.
func TestRemoveNewCacheEntries(t *testing.T) {
	cache := t.TempDir()
	started := time.Now()
	old := started.Add(-time.Hour)
	big := func(path string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
		f, err := os.Create(path)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(bigCacheEntry+1)) // sparse: no disk
		require.NoError(t, f.Close())
	}
	small := func(path string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
		require.NoError(t, os.WriteFile(path, []byte("x"), 0o600))
	}
	// Before the build: a large old entry, and a folder the build leaves.
	big(filepath.Join(cache, "0a", "old-d"))
	require.NoError(t, os.Chtimes(filepath.Join(cache, "0a", "old-d"), old, old))
	big(filepath.Join(cache, "0b", "untouched-d"))
	require.NoError(t, os.Chtimes(filepath.Join(cache, "0b"), old, old))
	// The build's own entries, in the folders it wrote to.
	big(filepath.Join(cache, "0a", "new-d"))
	small(filepath.Join(cache, "0a", "new-a"))
	big(filepath.Join(cache, "ff", "new-d"))
	// Neither a link nor what it points to is followed.
	outside := filepath.Join(t.TempDir(), "outside-d")
	big(outside)
	require.NoError(t, os.Symlink(filepath.Dir(outside), filepath.Join(cache, "0c")))
	require.NoError(t, os.Symlink(outside, filepath.Join(cache, "0a", "link-d")))

	removeNewCacheEntries(cache, started.Add(-time.Second))

	for _, kept := range []string{"0a/old-d", "0a/new-a", "0b/untouched-d", "0a/link-d"} {
		_, err := os.Lstat(filepath.Join(cache, kept))
		assert.NoError(t, err, "%s should stay", kept)
	}
	for _, gone := range []string{"0a/new-d", "ff/new-d"} {
		assert.NoFileExists(t, filepath.Join(cache, gone))
	}
	assert.FileExists(t, outside)
	// A cache that is not there, or not a folder, is nothing to do.
	removeNewCacheEntries(filepath.Join(cache, "missing"), started)
	removeNewCacheEntries(outside, started)
}

// The cache's folders are read only where a build wrote: a cache of
// 30,000 entries (a class's grader after some batches) costs a stat of
// its 256 folders, not of every entry.
func BenchmarkRemoveNewCacheEntries(b *testing.B) {
	cache := b.TempDir()
	old := time.Now().Add(-time.Hour)
	for i := range 256 {
		dir := filepath.Join(cache, fmt.Sprintf("%02x", i))
		require.NoError(b, os.Mkdir(dir, 0o700))
		for j := range 120 {
			require.NoError(b, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%064x-d", j)), nil, 0o600))
		}
		require.NoError(b, os.Chtimes(dir, old, old))
	}
	since := time.Now()
	b.ResetTimer()
	for b.Loop() {
		removeNewCacheEntries(cache, since)
	}
}
