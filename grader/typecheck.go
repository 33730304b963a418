package grader

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

// importer imports the packages that files import from their export data,
// which go list -export makes for the course's module.
func (b *builder) importer(ctx context.Context, fset *token.FileSet, files []*ast.File) (types.Importer, error) {
	imports := map[string]bool{}
	for _, af := range files {
		for _, imp := range af.Imports {
			if p, err := strconv.Unquote(imp.Path.Value); err == nil && p != "unsafe" && p != "C" {
				imports[p] = true
			}
		}
	}
	exports, err := b.exportData(ctx, imports)
	if err != nil {
		return nil, err
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if file, ok := exports[path]; ok {
			return os.Open(file)
		}
		return nil, fmt.Errorf("no export data for %q", path)
	}), nil
}

// exportData runs go list -export in the course's module for the import
// paths and their dependencies, and returns each package's export data
// file. A path that does not resolve has none (the type check then fails
// on it). The answer for a list of paths is kept for the grader's run:
// the submissions of an exercise import the same packages, and go list
// was a quarter of a small exercise's grading (it hashes every source
// file of every dependency to find the export data in the build cache).
func (b *builder) exportData(ctx context.Context, paths map[string]bool) (map[string]string, error) {
	if len(paths) == 0 {
		return map[string]string{}, nil
	}
	list := make([]string, 0, len(paths))
	for p := range paths {
		list = append(list, p)
	}
	sort.Strings(list)
	// The key quotes each path: a path is the student's (strconv.Unquote
	// of their import), and a separator it may contain could make two
	// lists one key, one student's failed list another's in a batch.
	key := fmt.Sprintf("%q", list)
	return b.exports.get(key, func() (map[string]string, error) { return b.goListExport(ctx, list) })
}

// goListExport is exportData's go list, for the sorted import paths list.
func (b *builder) goListExport(ctx context.Context, list []string) (map[string]string, error) {
	exports := map[string]string{}
	args := append([]string{"list", "-e", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", "--"}, list...)
	cmd := exec.CommandContext(ctx, b.goCmd, args...)
	cmd.Dir = b.course.Root
	cmd.Env = append(buildEnv(), "GOFLAGS=-mod=readonly -buildvcs=false")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("grader: go list -export for the type check: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	return exports, nil
}
