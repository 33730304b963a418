// Package pickletest holds what the tests of gpukit's pickle readers
// (gpukit/internal/pickle, gpukit/alloc/snapshot, gpukit/cmd/memtrace)
// share: gzip files read whole, and a hostile pickle.
package pickletest

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// Gunzip returns the decompressed contents of the gzip file at path.
func Gunzip(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	b, err := io.ReadAll(zr)
	require.NoError(t, err)
	return b
}

// Nested is a protocol 2 pickle of one list nested n deep: n EMPTY_LISTs,
// then n-1 APPENDs, each putting a list into the one below it.
func Nested(n int) []byte {
	b := append([]byte{0x80, 0x02}, bytes.Repeat([]byte{']'}, n)...)
	b = append(b, bytes.Repeat([]byte{'a'}, n-1)...)
	return append(b, '.')
}
