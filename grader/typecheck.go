package grader

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

// memoryPackages are the packages whose API reaches memory the code was not
// handed: unsafe, and reflect, which gives out unsafe pointers without
// naming unsafe (Value.UnsafePointer, UnsafeAddr, Pointer, NewAt,
// SliceHeader). No exercise needs reflect, so any use of it is refused,
// also through a value of a reflect type that another package hands out (a
// json.UnmarshalTypeError's Type field, say).
var memoryPackages = map[string]bool{"reflect": true, "unsafe": true}

// unsafeUses type-checks the package's non-test files (the exercise's given
// files and the student's) and returns, for each student file, why it may
// not run: a use of an object of reflect or unsafe, or an expression whose
// type is unsafe.Pointer or a type of reflect. The imports are read from
// their export data, which go list -export makes for the course's module.
// The files compiled, so a type error here means the check could not see
// everything: that file is refused too (fail closed).
func (b *builder) unsafeUses(ctx context.Context, pkg string, files []source, studentFiles []string) (map[string]string, error) {
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, f := range files {
		af, err := parser.ParseFile(fset, f.name, f.data, parser.SkipObjectResolution)
		if err != nil {
			return map[string]string{f.name: "does not parse"}, nil
		}
		parsed = append(parsed, af)
	}
	imp, err := b.importer(ctx, fset, parsed)
	if err != nil {
		return nil, err
	}
	conf := types.Config{
		Importer: imp,
		Error:    func(error) {}, // collected below, from the first one
	}
	info := &types.Info{
		Types: map[ast.Expr]types.TypeAndValue{},
		Uses:  map[*ast.Ident]types.Object{},
	}
	problems := map[string]string{}
	_, checkErr := conf.Check(pkg, fset, parsed, info)
	var terr types.Error
	if errors.As(checkErr, &terr) {
		name := fset.Position(terr.Pos).Filename
		if contains(studentFiles, name) {
			problems[name] = "the grader could not check it for memory access (" + terr.Msg + ")"
		} else {
			for _, s := range studentFiles {
				problems[s] = "the grader could not check the package for memory access"
			}
		}
	} else if checkErr != nil {
		return nil, fmt.Errorf("grader: type-checking the submission: %w", checkErr)
	}
	for _, af := range parsed {
		name := fset.Position(af.Package).Filename
		if !contains(studentFiles, name) || problems[name] != "" {
			continue
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if problems[name] != "" {
				return false
			}
			if id, ok := n.(*ast.Ident); ok {
				if obj := info.Uses[id]; obj != nil && obj.Pkg() != nil && memoryPackages[obj.Pkg().Path()] {
					problems[name] = fmt.Sprintf("%s uses %s.%s (line %d)", name, obj.Pkg().Path(), obj.Name(), fset.Position(id.Pos()).Line)
					return false
				}
			}
			if e, ok := n.(ast.Expr); ok {
				if tv, ok := info.Types[e]; ok && tv.Type != nil {
					if what := memoryType(tv.Type, 0); what != "" {
						problems[name] = fmt.Sprintf("%s uses a value of type %s (line %d)", name, what, fset.Position(e.Pos()).Line)
						return false
					}
				}
			}
			return true
		})
	}
	for f, why := range problems {
		problems[f] = why + ", which reaches memory the code was not handed"
	}
	return problems, nil
}

// memoryType returns the name of the unsafe.Pointer or reflect type that t
// is or is made of (not looking inside other named types), or "".
func memoryType(t types.Type, depth int) string {
	if depth > 8 {
		return ""
	}
	switch t := t.(type) {
	case *types.Basic:
		if t.Kind() == types.UnsafePointer {
			return "unsafe.Pointer"
		}
	case *types.Named:
		if obj := t.Obj(); obj.Pkg() != nil && memoryPackages[obj.Pkg().Path()] {
			return obj.Pkg().Path() + "." + obj.Name()
		}
		if args := t.TypeArgs(); args != nil {
			for i := range args.Len() {
				if w := memoryType(args.At(i), depth+1); w != "" {
					return w
				}
			}
		}
	case *types.Alias:
		return memoryType(types.Unalias(t), depth)
	case *types.Pointer:
		return memoryType(t.Elem(), depth+1)
	case *types.Slice:
		return memoryType(t.Elem(), depth+1)
	case *types.Array:
		return memoryType(t.Elem(), depth+1)
	case *types.Chan:
		return memoryType(t.Elem(), depth+1)
	case *types.Map:
		if w := memoryType(t.Key(), depth+1); w != "" {
			return w
		}
		return memoryType(t.Elem(), depth+1)
	case *types.Struct:
		for i := range t.NumFields() {
			if w := memoryType(t.Field(i).Type(), depth+1); w != "" {
				return w
			}
		}
	case *types.Tuple:
		for i := range t.Len() {
			if w := memoryType(t.At(i).Type(), depth+1); w != "" {
				return w
			}
		}
	case *types.Signature:
		if w := memoryType(t.Params(), depth+1); w != "" {
			return w
		}
		return memoryType(t.Results(), depth+1)
	}
	return ""
}

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
// on it).
func (b *builder) exportData(ctx context.Context, paths map[string]bool) (map[string]string, error) {
	exports := map[string]string{}
	if len(paths) == 0 {
		return exports, nil
	}
	list := make([]string, 0, len(paths))
	for p := range paths {
		list = append(list, p)
	}
	sort.Strings(list)
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
