package grader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Note [Reserved names of the hidden tests]
//
// Grading compiles the student's files, the given files and the hidden
// tests as one package, so a name declared at package level by the hidden
// tests (a helper measure, a type config) or imported by one of their files
// (debug, require) would clash with a student's helper of the same name,
// which the student cannot know in advance, and could be named by the
// student's code, which could then call it, or learn from a compile error
// that it exists. So the grader compiles a rewritten copy of the hidden
// tests: every such name, and every use of it in the hidden files, gets a
// prefix with a random token (hidden_<16 hex digits>_measure), chosen once
// per exercise per grader run. The package is type-checked (go/types, with
// the exercise's stubs and given files) to find exactly the identifiers
// that refer to those objects: a field, a method, a struct key or a local
// variable that merely shares a name keeps it. Test, Benchmark, Example and
// Fuzz functions keep their names (grade.json and the results name them),
// and so do init functions and blank names. Only a name the student
// declares like a hidden Test function still clashes; those are public.
//
// The rewrite changes identifiers in place, byte for byte, so the copy
// keeps the original's lines; feedback never shows them anyway (redactor).

// hiddenTests are an exercise's hidden test files as the grader compiles
// them.
type hiddenTests struct {
	files    []source // rewritten, under their own file names
	original []source // as their author wrote them
	prefix   string   // of every reserved name: "hidden_<token>_"
}

// hiddenTestsError says that an exercise's hidden tests cannot be
// rewritten: the exercise's fault (verify reports it), not the grader's.
type hiddenTestsError struct{ msg string }

func (e *hiddenTestsError) Error() string { return e.msg }

// stubsError says that the exercise folder's own files (the stubs, or a
// student's working copy of them, and the given files) do not compile.
type stubsError struct{ msg string }

func (e *stubsError) Error() string { return e.msg }

// hiddenTests returns the exercise's hidden tests with their names
// reserved (Note [Reserved names of the hidden tests]), from the grader's
// cache while the hidden tests, stubs and given files are unchanged.
func (g *Grader) hiddenTests(ctx context.Context, ex *Exercise) (*hiddenTests, error) {
	names, err := goFiles(ex.HiddenDir, true)
	if err != nil {
		return nil, err
	}
	var original []source
	for _, f := range names {
		data, err := os.ReadFile(filepath.Join(ex.HiddenDir, f))
		if err != nil {
			return nil, fmt.Errorf("grader: %w", err)
		}
		original = append(original, source{f, data})
	}
	stubs, err := g.packageFiles(ex, nil, nil)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	for _, files := range [][]source{stubs, original} {
		for _, f := range files {
			fmt.Fprintf(h, "%q %d\n", f.name, len(f.data))
			h.Write(f.data)
		}
	}
	key := ex.HiddenDir + "\n" + ex.Dir + "\n" + hex.EncodeToString(h.Sum(nil))
	return g.hidden.get(key, func() (*hiddenTests, error) {
		id, err := randomIdent()
		if err != nil {
			return nil, err
		}
		prefix := "hidden_" + id[:16] + "_"
		files, err := g.builder().reserveNames(ctx, ex.Spec.Package, stubs, original, prefix)
		var serr *stubsError
		if errors.As(err, &serr) {
			// In a student's checkout the exercise's folder is their working
			// copy: its code, not the hidden tests, is what does not compile.
			return nil, fmt.Errorf("grader: your code does not compile: %s/%s\n(grading type-checks the hidden tests against exercises/%s's files: fix that file, or restore it with git checkout)",
				filepath.ToSlash(g.relToCourse(ex.Dir)), serr.msg, ex.Name)
		}
		var herr *hiddenTestsError
		if errors.As(err, &herr) {
			return nil, &hiddenTestsError{fmt.Sprintf("grader: the hidden tests of %s: %s", ex.Name, herr.msg)}
		}
		if err != nil {
			return nil, err
		}
		return &hiddenTests{files: files, original: original, prefix: prefix}, nil
	})
}

// reserveNames returns the hidden files with every name they declare at
// package level (but test functions, init and _) and every name of a
// package they import given prefix, in their declarations and uses. The
// package of pkgFiles (stubs and given files) and hidden is type-checked
// to tell those uses from fields, methods and locals of the same name.
func (b *builder) reserveNames(ctx context.Context, pkg string, pkgFiles, hidden []source, prefix string) ([]source, error) {
	fset := token.NewFileSet()
	var parsed, hiddenParsed []*ast.File
	for i, f := range append(append([]source(nil), pkgFiles...), hidden...) {
		af, err := parser.ParseFile(fset, f.name, f.data, parser.SkipObjectResolution)
		if err != nil && i < len(pkgFiles) {
			return nil, &stubsError{err.Error()}
		}
		if err != nil {
			return nil, &hiddenTestsError{fmt.Sprintf("does not parse: %v", err)}
		}
		parsed = append(parsed, af)
		if i >= len(pkgFiles) {
			hiddenParsed = append(hiddenParsed, af)
		}
	}
	imp, err := b.importer(ctx, fset, parsed)
	if err != nil {
		return nil, err
	}
	info := &types.Info{
		Defs:      map[*ast.Ident]types.Object{},
		Uses:      map[*ast.Ident]types.Object{},
		Implicits: map[ast.Node]types.Object{},
	}
	tpkg, err := (&types.Config{Importer: imp}).Check(pkg, fset, parsed, info)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var terr types.Error
		if errors.As(err, &terr) {
			isPkgFile := map[string]bool{}
			for _, f := range pkgFiles {
				isPkgFile[f.name] = true
			}
			if isPkgFile[terr.Fset.Position(terr.Pos).Filename] {
				return nil, &stubsError{err.Error()}
			}
		}
		return nil, &hiddenTestsError{fmt.Sprintf("they do not type-check with the exercise's stubs and given files: %v", err)}
	}
	inHidden := map[*token.File]bool{}
	for _, af := range hiddenParsed {
		inHidden[fset.File(af.Pos())] = true
	}
	hiddenPos := func(p token.Pos) bool { return inHidden[fset.File(p)] }

	type edit struct {
		at   token.Pos
		old  int // bytes replaced
		text string
	}
	var edits []edit
	reserved := map[types.Object]string{}
	for _, af := range hiddenParsed {
		for _, spec := range af.Imports {
			switch {
			case spec.Name == nil:
				// An implicit name: write one before the path.
				obj := info.Implicits[spec]
				if obj == nil {
					return nil, &hiddenTestsError{fmt.Sprintf("%s: no package name for import %s", fset.Position(spec.Pos()), spec.Path.Value)}
				}
				reserved[obj] = prefix + obj.Name()
				edits = append(edits, edit{spec.Path.Pos(), 0, prefix + obj.Name() + " "})
			case spec.Name.Name == ".":
				return nil, &hiddenTestsError{fmt.Sprintf("%s: a dot-import (import . %s) puts names in the student's package; import it by name", fset.Position(spec.Pos()), spec.Path.Value)}
			case spec.Name.Name != "_":
				if obj := info.Defs[spec.Name]; obj != nil {
					reserved[obj] = prefix + obj.Name()
				}
			}
		}
	}
	for id, obj := range info.Defs {
		if obj != nil && hiddenPos(id.Pos()) && obj.Parent() == tpkg.Scope() && !keepsName(obj) {
			reserved[obj] = prefix + obj.Name()
		}
	}
	// An embedded field is named after its type: renaming the type renames
	// the field, in selectors and struct keys too.
	for id, obj := range info.Defs {
		if v, ok := obj.(*types.Var); ok && v.Embedded() && hiddenPos(id.Pos()) {
			if name, ok := reserved[info.Uses[id]]; ok {
				reserved[v] = name
			}
		}
	}
	for _, af := range hiddenParsed {
		ast.Inspect(af, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := info.Defs[id]
			if obj == nil {
				obj = info.Uses[id]
			}
			if name, ok := reserved[obj]; ok && obj != nil {
				edits = append(edits, edit{id.Pos(), len(id.Name), name})
			}
			return true
		})
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].at < edits[j].at })
	out := make([]source, len(hidden))
	for i, f := range hidden {
		tf := fset.File(hiddenParsed[i].Pos())
		var b strings.Builder
		last := 0
		for _, e := range edits {
			if fset.File(e.at) != tf {
				continue
			}
			at := tf.Offset(e.at)
			b.Write(f.data[last:at])
			b.WriteString(e.text)
			last = at + e.old
		}
		b.Write(f.data[last:])
		out[i] = source{f.name, []byte(b.String())}
	}
	return out, nil
}

// keepsName reports whether a package-level object of the hidden tests
// keeps its name: a function that go test runs or lists (grade.json names
// the tests), init, and _.
func keepsName(obj types.Object) bool {
	name := obj.Name()
	if name == "_" {
		return true
	}
	if _, ok := obj.(*types.Func); !ok {
		return false
	}
	if name == "init" {
		return true
	}
	return isTestName(name) || testPrefixed(name, "Benchmark") || testPrefixed(name, "Example") || testPrefixed(name, "Fuzz")
}
