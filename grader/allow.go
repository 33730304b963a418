package grader

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"strconv"
	"strings"
)

// Note [Allow, do not deny]
//
// A student's file may import only the packages its exercise allows
// (grade.json's "imports", DefaultImports when it says nothing) and use,
// of other packages, only the objects the exercise names ("names", such as
// runtime.GC). Everything else is refused, however it is reached: by an
// import, by a value of a type that an allowed package hands out (a
// json.UnmarshalTypeError's reflect.Type, a *os.File), by a method of such
// a value, by a generic instantiated with such a type. A denylist is one
// route short every time (the grader was beaten by os.Args, runtime.GOMAXPROCS,
// flag.Set and /proc/self/exe, each through a package no list had named);
// an allowlist closes whole classes at once:
//
//   - no process creation (os.StartProcess, os/exec, syscall),
//   - no runtime knobs (runtime.GOMAXPROCS, runtime/debug),
//   - no change of the arguments or flags the verdict rests on (os.Args,
//     flag),
//   - no files (os, io/fs, the binary itself through /proc/self/exe),
//   - no memory the code was not handed (unsafe, reflect, and the data
//     races that a raised GOMAXPROCS makes possible).
//
// The allowed packages must not reopen these classes: a gpukit function
// that opens a path it is given or starts a process is refused by name
// (refusedAPI; TestRefusedAPIIsComplete finds every exported function of
// gpukit that reaches such a call and fails when one is missing).

// DefaultImports are the packages a student file may import when the
// exercise's grade.json does not list its own: the course's library and a
// few pure packages of the standard library. A path ending in "/..." allows
// the packages below it too.
var DefaultImports = []string{
	"bytes", "encoding/binary", "errors", "fmt", "math", "slices", "strings", "time",
	ModulePath + "/gpukit/...",
}

// DefaultNames are objects of packages outside the allowed imports that a
// student file may still use: harmless calls a right answer may make.
var DefaultNames = []string{"runtime.GC", "runtime.KeepAlive"}

// refusedAPI are the exported functions and methods of gpukit that open a
// path they are given, write files, read a process's own files or turn a
// runtime knob (the test helpers' collector switch): an
// allowed import must not hand a student's code the file system
// (TestRefusedAPIIsComplete keeps the list whole). Names are
// types.Func.FullName's.
var refusedAPI = map[string]bool{
	"(*" + ModulePath + "/gpukit/optim.Adam).LoadFile":                true,
	"(*" + ModulePath + "/gpukit/optim.Adam).SaveFile":                true,
	"(*" + ModulePath + "/gpukit/optim.SGD).LoadFile":                 true,
	"(*" + ModulePath + "/gpukit/optim.SGD).SaveFile":                 true,
	"(*" + ModulePath + "/gpukit/profiler.Profile).ExportChromeTrace": true,
	ModulePath + "/gpukit/data.OpenShards":                            true,
	ModulePath + "/gpukit/data.WriteShard":                            true,
	ModulePath + "/gpukit/nn.LoadFile":                                true,
	ModulePath + "/gpukit/nn.SaveFile":                                true,
	ModulePath + "/gpukit/nn.SaveTensors":                             true,
	ModulePath + "/gpukit/nn/nntest.AddSavedFile":                     true,
	ModulePath + "/gpukit/nn/nntest.WriteTemp":                        true,
	ModulePath + "/gpukit/nn/safetensors.Open":                        true,
	ModulePath + "/gpukit/nn/safetensors.Write":                       true,
	ModulePath + "/gpukit/profiler.DumpSnapshot":                      true,
	ModulePath + "/gpukit/tensor/tensortest.NoCollector":              true,
	ModulePath + "/gpukit/viz/memviewer.CheckOutputs":                 true,
	ModulePath + "/gpukit/viz/memviewer.WriteHTMLFile":                true,
	ModulePath + "/gpukit/viz/memviewer.WritePickleFile":              true,
}

// policy is what a student file of one exercise may use.
type policy struct {
	imports []string        // allowed import paths; "p/..." allows p and below
	names   map[string]bool // "path.Name" objects allowed beyond the imports
}

func policyFor(spec *Spec) policy {
	imports, names := DefaultImports, DefaultNames
	if spec != nil && spec.Imports != nil {
		imports = spec.Imports
	}
	if spec != nil && spec.Names != nil {
		names = spec.Names
	}
	p := policy{imports: imports, names: map[string]bool{}}
	for _, n := range names {
		p.names[n] = true
	}
	return p
}

// importAllowed reports whether a student file may import path.
func (p policy) importAllowed(path string) bool {
	if p.packageAllowed(path) {
		return true
	}
	// A package some names are allowed from may be imported for them; the
	// type check refuses any other of its objects.
	for n := range p.names {
		if pkg, _ := splitName(n); pkg == path {
			return true
		}
	}
	return false
}

// packageAllowed reports whether every object of path (but refusedAPI) may
// be used.
func (p policy) packageAllowed(path string) bool {
	for _, a := range p.imports {
		if tree, ok := strings.CutSuffix(a, "/..."); ok {
			if path == tree || strings.HasPrefix(path, tree+"/") {
				return true
			}
		} else if path == a {
			return true
		}
	}
	return false
}

// describe lists what is allowed, for the message a refused file gets.
func (p policy) describe() string {
	list := slices.Clone(p.imports)
	for n := range p.names {
		list = append(list, n)
	}
	slices.Sort(list)
	return strings.Join(list, ", ")
}

// splitName splits "path.Name" at its last dot.
func splitName(n string) (pkg, name string) {
	i := strings.LastIndex(n, ".")
	if i <= 0 || i == len(n)-1 {
		return "", ""
	}
	return n[:i], n[i+1:]
}

// checkNames checks the "imports" and "names" of a grade.json.
func checkNames(imports, names []string) error {
	for _, imp := range imports {
		path := strings.TrimSuffix(imp, "/...")
		if path == "" || strings.ContainsAny(path, " \t\"\\") || strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") {
			return fmt.Errorf("imports: %q is not an import path (or path/...)", imp)
		}
		if path == "C" || path == "unsafe" || path == "reflect" {
			return fmt.Errorf("imports: %q can never be allowed: it reaches memory the code was not handed", imp)
		}
	}
	for _, n := range names {
		pkg, name := splitName(n)
		if pkg == "" || !identifier.MatchString(name) || pkg == "unsafe" || pkg == "reflect" {
			return fmt.Errorf("names: %q is not path.Name (runtime.GC, say) of a package other than unsafe and reflect", n)
		}
	}
	return nil
}

// notAllowed is what a refused file is told, with the list of what is.
const notAllowed = "uses a package this exercise does not allow"

// checkSource refuses, before anything is built, a student file that
// imports a package the policy does not allow or holds a compiler
// directive: every //go: comment (build constraints, linkname, embed,
// cgo's), a //line or /*line comment (which would make the compiler blame
// another file), a // +build line.
func (p policy) checkSource(fset *token.FileSet, name string, f *ast.File) string {
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !p.importAllowed(path) {
			return fmt.Sprintf("%s imports %q: %s (allowed: %s)", name, path, notAllowed, p.describe())
		}
	}
	for _, g := range f.Comments {
		for _, c := range g.List {
			text := c.Text
			if strings.HasPrefix(text, "//go:") || strings.HasPrefix(text, "//line ") || strings.HasPrefix(text, "/*line ") ||
				strings.HasPrefix(strings.TrimLeft(strings.TrimPrefix(text, "//"), " \t"), "+build") {
				directive, _, _ := strings.Cut(strings.Join(strings.Fields(text), " "), " ")
				if directive == "//" {
					directive = "// +build"
				}
				return fmt.Sprintf("%s uses the directive %q (line %d), which graded code may not use", name, directive, fset.Position(c.Slash).Line)
			}
		}
	}
	return ""
}

// policyUses type-checks the package's non-test files (the exercise's
// given files and the student's) and returns, for each student file, why
// it may not run: a use of an object that the policy does not allow, or an
// expression whose type is made of a type from a package it does not
// allow (or is unsafe.Pointer). The imports are read from their export
// data, which go list -export makes for the course's module. The files
// compiled, so a type error here means the check could not see
// everything: that file is refused too (fail closed).
func (b *builder) policyUses(ctx context.Context, p policy, pkg string, files []source, studentFiles []string) (map[string]string, error) {
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, f := range files {
		af, err := parser.ParseFile(fset, f.name, f.data, parser.SkipObjectResolution)
		if err != nil {
			return map[string]string{f.name: f.name + " does not parse"}, nil
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
	tpkg, checkErr := conf.Check(pkg, fset, parsed, info)
	var terr types.Error
	if errors.As(checkErr, &terr) {
		name := fset.Position(terr.Pos).Filename
		if contains(studentFiles, name) {
			problems[name] = name + ": the grader could not check it (" + terr.Msg + ")"
		} else {
			for _, s := range studentFiles {
				problems[s] = s + ": the grader could not check the package"
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
			line := func(pos token.Pos) int { return fset.Position(pos).Line }
			if id, ok := n.(*ast.Ident); ok {
				if obj := info.Uses[id]; obj != nil && !p.objectAllowed(obj, tpkg) {
					problems[name] = fmt.Sprintf("%s uses %s (line %d): %s (allowed: %s)", name, objectName(obj), line(id.Pos()), notAllowed, p.describe())
					return false
				}
			}
			if e, ok := n.(ast.Expr); ok {
				if tv, ok := info.Types[e]; ok && tv.Type != nil {
					if what := p.foreignType(tv.Type, tpkg, 0); what != "" {
						problems[name] = fmt.Sprintf("%s uses a value of type %s (line %d): %s (allowed: %s)", name, what, line(e.Pos()), notAllowed, p.describe())
						return false
					}
				}
			}
			return true
		})
	}
	return problems, nil
}

// objectAllowed reports whether code of package own may use obj.
func (p policy) objectAllowed(obj types.Object, own *types.Package) bool {
	pkg := obj.Pkg()
	if pkg == nil || pkg == own {
		return true // the universe (error, len), or the exercise's own package
	}
	if _, ok := obj.(*types.PkgName); ok {
		return true // the import itself: checkSource judged it
	}
	if fn, ok := obj.(*types.Func); ok {
		if refusedAPI[fn.Origin().FullName()] {
			return false
		}
	}
	if p.names[pkg.Path()+"."+obj.Name()] {
		return true
	}
	return p.packageAllowed(pkg.Path())
}

func objectName(obj types.Object) string {
	if fn, ok := obj.(*types.Func); ok {
		return fn.Origin().FullName()
	}
	return obj.Pkg().Path() + "." + obj.Name()
}

// foreignType returns the name of a type that t is or is made of (not
// looking inside the named types of allowed packages) which the policy
// does not allow: unsafe.Pointer, or a named type of a package that is not
// allowed. "" when there is none.
func (p policy) foreignType(t types.Type, own *types.Package, depth int) string {
	if depth > 8 {
		return ""
	}
	switch t := t.(type) {
	case *types.Basic:
		if t.Kind() == types.UnsafePointer {
			return "unsafe.Pointer"
		}
	case *types.Named:
		if obj := t.Obj(); obj.Pkg() != nil && obj.Pkg() != own && !p.packageAllowed(obj.Pkg().Path()) {
			return obj.Pkg().Path() + "." + obj.Name()
		}
		if args := t.TypeArgs(); args != nil {
			for i := range args.Len() {
				if w := p.foreignType(args.At(i), own, depth+1); w != "" {
					return w
				}
			}
		}
	case *types.Alias:
		return p.foreignType(types.Unalias(t), own, depth)
	case *types.Pointer:
		return p.foreignType(t.Elem(), own, depth+1)
	case *types.Slice:
		return p.foreignType(t.Elem(), own, depth+1)
	case *types.Array:
		return p.foreignType(t.Elem(), own, depth+1)
	case *types.Chan:
		return p.foreignType(t.Elem(), own, depth+1)
	case *types.Map:
		if w := p.foreignType(t.Key(), own, depth+1); w != "" {
			return w
		}
		return p.foreignType(t.Elem(), own, depth+1)
	case *types.Struct:
		for i := range t.NumFields() {
			if w := p.foreignType(t.Field(i).Type(), own, depth+1); w != "" {
				return w
			}
		}
	case *types.Tuple:
		for i := range t.Len() {
			if w := p.foreignType(t.At(i).Type(), own, depth+1); w != "" {
				return w
			}
		}
	case *types.Signature:
		if w := p.foreignType(t.Params(), own, depth+1); w != "" {
			return w
		}
		return p.foreignType(t.Results(), own, depth+1)
	case *types.Interface:
		for i := range t.NumMethods() {
			if w := p.foreignType(t.Method(i).Type(), own, depth+1); w != "" {
				return w
			}
		}
	}
	return ""
}
