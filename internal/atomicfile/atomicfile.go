// Package atomicfile writes a user's file so that a crash, a kill or a full
// disk never leaves half a file where a good one was: the bytes go to a
// temporary file in the destination's directory, are synced, and the
// temporary file is renamed over the destination only when everything
// succeeded. Every file the course writes for a user goes through it.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write creates path with the bytes that write produces. The destination is
// replaced only if write and every file operation succeed; otherwise it is
// left as it was and the temporary file is removed. perm applies to a new
// file; an existing file keeps its mode.
func Write(path string, perm os.FileMode, write func(w io.Writer) error) (err error) {
	if path == "" {
		return errors.New("atomicfile: empty path")
	}
	dir := filepath.Dir(path)
	if info, statErr := os.Stat(path); statErr == nil {
		if info.IsDir() {
			return fmt.Errorf("atomicfile: %s is a directory", path)
		}
		perm = info.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("atomicfile: cannot write in %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = write(tmp); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("atomicfile: sync %s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	// Sync the directory so the rename itself survives a crash; some
	// file systems refuse to sync a directory, which loses nothing.
	if d, dirErr := os.Open(dir); dirErr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// WriteFile is Write for bytes already in memory, like os.WriteFile.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// CheckWritable reports, before any long work, whether a file can be
// created at path: its directory exists and accepts a new file, and path is
// not a directory. It creates and removes a temporary file to find out.
func CheckWritable(path string) error {
	if path == "" {
		return errors.New("atomicfile: empty path")
	}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return fmt.Errorf("atomicfile: %s is a directory", path)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".probe-*")
	if err != nil {
		return fmt.Errorf("atomicfile: cannot write in %s: %w", dir, err)
	}
	name := tmp.Name()
	tmp.Close()
	return os.Remove(name)
}
