package grader

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gpumem/course/internal/atomicfile"
)

// courseFiles lists the course's files (slash paths relative to the root):
// git's tracked files when the course is a git checkout (what the course
// declares: a gradebook or feedback written beside it is not the course),
// otherwise every file but build outputs.
func (c *Course) courseFiles() ([]string, error) {
	if _, err := os.Stat(filepath.Join(c.Root, ".git")); err == nil {
		cmd := exec.Command("git", "ls-files", "-z", "--cached")
		cmd.Dir = c.Root
		if out, err := cmd.Output(); err == nil {
			var files []string
			for _, f := range strings.Split(string(out), "\x00") {
				if f == "" {
					continue
				}
				if info, err := os.Lstat(filepath.Join(c.Root, f)); err == nil && info.Mode().IsRegular() {
					files = append(files, f)
				}
			}
			return files, nil
		}
	}
	var files []string
	err := filepath.WalkDir(c.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.Root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "node_modules", ".ipynb_checkpoints":
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && !strings.HasSuffix(rel, ".test") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("grader: %w", err)
	}
	return files, nil
}

// instructorOnly reports whether a course file stays out of the student
// edition: the solutions and the hidden tests.
func instructorOnly(rel string) bool {
	return rel == "solutions" || strings.HasPrefix(rel, "solutions/") || strings.HasPrefix(rel, "grader/hidden/")
}

// Release writes the student edition of the course into out, which must
// not exist yet or be empty: every file but the solutions and the hidden
// tests. It returns the number of files written.
func (c *Course) Release(out string) (int, error) {
	abs, err := resolvePath(out)
	if err != nil {
		return 0, fmt.Errorf("grader: %w", err)
	}
	root, err := resolvePath(c.Root)
	if err != nil {
		return 0, fmt.Errorf("grader: %w", err)
	}
	if abs == root || strings.HasPrefix(abs, root+string(filepath.Separator)) {
		return 0, fmt.Errorf("grader: %s is inside the course; write the student edition elsewhere", abs)
	}
	if entries, err := os.ReadDir(abs); err == nil && len(entries) > 0 {
		return 0, fmt.Errorf("grader: %s is not empty; give a new or empty folder", abs)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("grader: %w", err)
	}
	files, err := c.courseFiles()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, rel := range files {
		if instructorOnly(rel) {
			continue
		}
		if err := copyFile(filepath.Join(c.Root, filepath.FromSlash(rel)), filepath.Join(abs, filepath.FromSlash(rel))); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// resolvePath is path made absolute with every symlink resolved, also
// where its last parts do not exist yet.
func resolvePath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rest := ""
	for dir := abs; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest), nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if filepath.Dir(dir) == dir {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// copyFile copies src to dst atomically, keeping its permission bits.
func copyFile(src, dst string) error {
	info, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("grader: %w", err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("grader: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("grader: %w", err)
	}
	return atomicfile.WriteFile(dst, data, info.Mode().Perm())
}
