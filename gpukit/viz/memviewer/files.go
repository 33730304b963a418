package memviewer

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/internal/atomicfile"
)

// WritePickleFile writes s to path as WritePickle does. The file is written
// to a temporary file in the same folder, synced and renamed over path only
// when complete, so a crash, a kill or a full disk never leaves a truncated
// pickle where a good file was.
func WritePickleFile(path string, s alloc.Snapshot) error {
	return writeFile(path, func(w io.Writer) error { return WritePickle(w, s) })
}

// WriteHTMLFile writes the viewer page for s to path as WriteHTML does, with
// the same safety as WritePickleFile.
func WriteHTMLFile(path string, s alloc.Snapshot, opts ...Option) error {
	return writeFile(path, func(w io.Writer) error { return WriteHTML(w, s, opts...) })
}

func writeFile(path string, write func(io.Writer) error) error {
	err := atomicfile.Write(path, 0o644, func(f io.Writer) error {
		bw := bufio.NewWriterSize(f, 256<<10)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("memviewer: writing %s: %w", path, err)
	}
	return nil
}

// ErrSameFile is wrapped by CheckOutputs when two paths name one file.
var ErrSameFile = errors.New("memviewer: two outputs name the same file")

// CheckOutputs reports, before any long work, whether files can be written
// at the given paths: each folder exists and accepts a file, no path is a
// folder, and no two paths name the same file (the error then wraps
// ErrSameFile).
func CheckOutputs(paths ...string) error {
	for i, p := range paths {
		if err := atomicfile.CheckWritable(p); err != nil {
			return fmt.Errorf("memviewer: %w", err)
		}
		for _, q := range paths[:i] {
			if sameFile(p, q) {
				return fmt.Errorf("%w: %s and %s; give each output its own path", ErrSameFile, q, p)
			}
		}
	}
	return nil
}

func sameFile(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(ia, ib)
	}
	return cleanAbs(a) == cleanAbs(b)
}

func cleanAbs(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}
