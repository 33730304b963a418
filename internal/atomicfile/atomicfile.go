// Package atomicfile writes a user's file so that a crash, a kill or a full
// disk never leaves half a file where a good one was: the bytes go to a
// temporary file in the destination's directory, are synced, and the
// temporary file is renamed over the destination only when everything
// succeeded. Every file the course writes for a user goes through it.
//
// Atomic replacement is right for regular files only. A destination that
// is a symbolic link is resolved first, and its target is replaced (the
// link stays a link, as when a program opens the path and writes); a
// destination that is not a regular file (a directory, a FIFO, a device
// node such as /dev/full, a socket) is refused, never replaced.
//
// A temporary file is named ".<name>.<random>.atomicfile-tmp" and locked
// (flock) while it is written. A writer killed mid-save leaves it behind;
// the next Write in that directory removes every such file that no live
// writer holds and that is older than a minute.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// tmpSuffix ends the name of every temporary file this package makes.
const tmpSuffix = ".atomicfile-tmp"

// staleAfter is how old an unlocked temporary file must be before a later
// Write removes it: older than the moment between its creation and its
// lock.
const staleAfter = time.Minute

// maxLinks bounds the symbolic links followed, as the kernel's ELOOP does.
const maxLinks = 40

// Resolve returns the file a write to path changes: path itself, or the
// final target of the symbolic links it names (which need not exist yet).
// It refuses an empty path and a destination that exists and is not a
// regular file.
func Resolve(path string) (string, error) {
	if path == "" {
		return "", errors.New("atomicfile: empty path")
	}
	p := path
	for range maxLinks {
		info, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return p, nil
		case err != nil:
			return "", fmt.Errorf("atomicfile: %w", err)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return "", fmt.Errorf("atomicfile: %w", err)
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(p), target)
			}
			p = target
		case info.IsDir():
			return "", fmt.Errorf("atomicfile: %s is a directory", describe(path, p))
		case !info.Mode().IsRegular():
			return "", fmt.Errorf("atomicfile: %s is not a regular file (%s); it is never replaced", describe(path, p), kind(info.Mode()))
		default:
			return p, nil
		}
	}
	return "", fmt.Errorf("atomicfile: %s: too many levels of symbolic links", path)
}

func describe(path, resolved string) string {
	if path == resolved {
		return path
	}
	return fmt.Sprintf("%s (through symbolic links, %s)", path, resolved)
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// Write creates path with the bytes that write produces. The destination is
// replaced only if write and every file operation succeed; otherwise it is
// left as it was and the temporary file is removed. perm applies to a new
// file; an existing file keeps its mode. See the package doc for symbolic
// links, non-regular files and stale temporary files.
func Write(path string, perm os.FileMode, write func(w io.Writer) error) (err error) {
	dst, err := Resolve(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(dst)
	if info, statErr := os.Stat(dst); statErr == nil {
		perm = info.Mode().Perm()
	}
	removeStale(dir)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(dst)+".*"+tmpSuffix)
	if err != nil {
		return fmt.Errorf("atomicfile: cannot write in %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = lock(tmp); err != nil {
		return fmt.Errorf("atomicfile: lock %s: %w", tmp.Name(), err)
	}
	if err = write(tmp); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("atomicfile: sync %s: %w", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	// Closing releases the lock, after the rename: a cleaner never sees
	// the temporary unlocked under its temporary name.
	if err = tmp.Close(); err != nil {
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

// removeStale removes the temporary files of writers that died in dir:
// those no writer has locked, older than staleAfter. Errors are ignored;
// they cost a stray file, never a save.
func removeStale(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, tmpSuffix) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < staleAfter {
			continue
		}
		p := filepath.Join(dir, name)
		f, err := os.OpenFile(p, os.O_RDONLY|noFollow, 0)
		if err != nil {
			continue
		}
		if tryLock(f) {
			os.Remove(p)
		}
		f.Close()
	}
}

// WriteFile is Write for bytes already in memory, like os.WriteFile.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// CheckWritable reports, before any long work, whether a file can be
// created at path: its directory exists and accepts a new file, and path
// (resolved as Write resolves it) is a regular file or nothing yet. It
// creates and removes a temporary file to find out.
func CheckWritable(path string) error {
	dst, err := Resolve(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(dst)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(dst)+".*"+tmpSuffix)
	if err != nil {
		return fmt.Errorf("atomicfile: cannot write in %s: %w", dir, err)
	}
	name := tmp.Name()
	tmp.Close()
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
