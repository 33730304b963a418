package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteReplacesOnlyOnSuccess(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")
	require.NoError(t, WriteFile(path, []byte("good"), 0o644))

	failure := errors.New("disk full")
	err := Write(path, 0o644, func(w io.Writer) error {
		w.Write([]byte("half"))
		return failure
	})
	assert.ErrorIs(t, err, failure)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "good", string(got), "a failed write must leave the old file")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "the temporary file must be removed")

	require.NoError(t, WriteFile(path, []byte("better"), 0o644))
	got, _ = os.ReadFile(path)
	assert.Equal(t, "better", string(got))
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
	}{
		{"empty path", ""},
		{"a directory", dir},
		{"missing directory", filepath.Join(dir, "no", "such", "file")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Error(t, WriteFile(tt.path, []byte("x"), 0o644))
			assert.Error(t, CheckWritable(tt.path))
		})
	}
	assert.NoError(t, CheckWritable(filepath.Join(dir, "fresh")))
	_, err := os.Stat(filepath.Join(dir, "fresh"))
	assert.True(t, os.IsNotExist(err), "CheckWritable must leave nothing behind")
}

func TestWriteKeepsMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script.sh")
	require.NoError(t, WriteFile(path, []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, WriteFile(path, []byte("#!/bin/sh\necho\n"), 0o600))
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm())
}
