package grader

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every name the hidden tests declare at package level or import gets the
// prefix, in its declaration and its uses; fields, methods, struct keys,
// locals and strings that share a name keep it, as do test functions and
// init. The rest of the file is unchanged, byte for byte.
func TestReserveNames(t *testing.T) {
	t.Parallel()
	b := (&Grader{Course: &Course{Root: courseRootForTest(t)}}).builder()
	given := source{"given.go", []byte("package p\n\n// Shape has a field named like a hidden helper.\ntype Shape struct{ measure, Limit int }\n\nfunc (s Shape) Size() int { return s.measure }\n")}
	hidden := `package p

import (
	"strings"
	tst "testing"
	_ "embed"
)

type config struct{ measure int } // a field named like a helper

type wrapper struct {
	config
	*strings.Builder
}

type (
	alias = config
	list  []alias
)

const limit, other = 3, 4

func init() { _ = other }

func (c config) check() int { return c.measure }

func measure(s Shape) int {
	measure := s.measure + s.Size()
	return measure
}

func Testify() list { return nil } // not a test: a lower-case letter follows

func TestA(t *tst.T) {
	w := wrapper{config: config{measure: limit}, Builder: nil}
	_ = w.config.check() + w.check() + measure(Shape{measure: 1, Limit: limit}) + len(Testify())
	_ = strings.ToUpper("measure config limit")
	m := map[string]int{"limit": limit}
	_ = m
}

func BenchmarkA(b *tst.B) {}

func FuzzA(f *tst.F) {}

func ExampleShape() {}
`
	want := `package p

import (
	hidden_x_strings "strings"
	hidden_x_tst "testing"
	_ "embed"
)

type hidden_x_config struct{ measure int } // a field named like a helper

type hidden_x_wrapper struct {
	hidden_x_config
	*hidden_x_strings.Builder
}

type (
	hidden_x_alias = hidden_x_config
	hidden_x_list  []hidden_x_alias
)

const hidden_x_limit, hidden_x_other = 3, 4

func init() { _ = hidden_x_other }

func (c hidden_x_config) check() int { return c.measure }

func hidden_x_measure(s Shape) int {
	measure := s.measure + s.Size()
	return measure
}

func hidden_x_Testify() hidden_x_list { return nil } // not a test: a lower-case letter follows

func TestA(t *hidden_x_tst.T) {
	w := hidden_x_wrapper{hidden_x_config: hidden_x_config{measure: hidden_x_limit}, Builder: nil}
	_ = w.hidden_x_config.check() + w.check() + hidden_x_measure(Shape{measure: 1, Limit: hidden_x_limit}) + len(hidden_x_Testify())
	_ = hidden_x_strings.ToUpper("measure config limit")
	m := map[string]int{"limit": hidden_x_limit}
	_ = m
}

func BenchmarkA(b *hidden_x_tst.B) {}

func FuzzA(f *hidden_x_tst.F) {}

func ExampleShape() {}
`
	got, err := b.reserveNames(context.Background(), "p", []source{given}, []source{{"a_test.go", []byte(hidden)}}, "hidden_x_")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "a_test.go", got[0].name)
	assert.Equal(t, want, string(got[0].data))

	// What cannot be rewritten is the exercise's problem, said as such.
	for _, tc := range []struct{ src, want string }{
		{"package p\n\nimport . \"strings\"\n\nvar _ = ToUpper\n", "a dot-import"},
		{"package p\n\nfunc f() int { return undefinedName }\n", "do not type-check with the exercise's stubs and given files"},
		{"package p\n\nfunc f( {\n", "does not parse"},
	} {
		_, err := b.reserveNames(context.Background(), "p", []source{given}, []source{{"a_test.go", []byte(tc.src)}}, "hidden_x_")
		var herr *hiddenTestsError
		require.ErrorAs(t, err, &herr, tc.src)
		assert.Contains(t, err.Error(), tc.want, tc.src)
	}
	// What does not compile in the exercise's own files (in a student's
	// checkout, their working copy) is their code's problem, not the
	// hidden tests'.
	for _, tc := range []struct{ src, want string }{
		{"package p\n\nfunc g() int { return undefinedName }\n", "stub.go:3:23: undefined: undefinedName"},
		{"package p\n\nfunc g( {\n", "stub.go:3"},
	} {
		_, err := b.reserveNames(context.Background(), "p", []source{given, {"stub.go", []byte(tc.src)}}, []source{{"a_test.go", []byte("package p\n")}}, "hidden_x_")
		var serr *stubsError
		require.ErrorAs(t, err, &serr, tc.src)
		assert.Contains(t, err.Error(), tc.want, tc.src)
	}
}

// courseRootForTest is the real course, two folders up.
func courseRootForTest(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	return root
}

// A right answer with helpers named like the hidden tests' helpers and
// like the packages they import keeps full marks on a real exercise (such
// a submission did not compile, and the student could not know why).
func TestGradeKeepsHelpersNamedLikeHidden(t *testing.T) {
	t.Parallel()
	c, err := OpenCourse("..")
	require.NoError(t, err)
	ex, err := c.Exercise("03-saved-bytes")
	require.NoError(t, err)
	extras := "\n// Named like helpers of the hidden tests (measure and check also\n" +
		"// like the public tests', which grading does not compile).\n" +
		"func measure() {}\n\nvar check = 1\n\nfunc tensorLog() bool { return check == 1 }\n\n" +
		"// Named like packages the hidden tests import.\nconst runtime = false\n\ntype tensortest struct{}\n"
	taken := hiddenNames(t, ex.HiddenDir)
	for _, name := range []string{"measure", "check", "tensorLog", "runtime", "tensortest"} {
		require.True(t, taken[name], "the hidden tests of 03-saved-bytes no longer declare or import %s: choose other names", name)
	}
	ref, err := os.ReadFile(filepath.Join(ex.SolutionDir, "predict.go"))
	require.NoError(t, err)
	sub := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(sub, "predict.go"), append(ref, extras...), 0o644))

	g, _ := newGrader(t, c, SandboxAuto)
	res, err := g.Grade(context.Background(), ex, sub)
	require.NoError(t, err)
	assert.Equal(t, "graded", res.Status, res.Output)
	assert.Empty(t, res.Output)
	assert.Equal(t, res.MaxScore, res.Score, "%+v", res.Tests)
}

// hiddenNames are the names the hidden test files in dir declare at their
// top level or import.
func hiddenNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := goFiles(dir, true)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, f), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for n := range declaredNames(parsed) {
			names[n] = true
		}
		for _, imp := range parsed.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			name := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = true
		}
	}
	return names
}

// declaredNames are the names a file declares at its top level (and its
// methods'), as a set.
func declaredNames(f *ast.File) map[string]bool {
	names := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			names[d.Name.Name] = true
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					names[spec.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						names[n.Name] = true
					}
				}
			}
		}
	}
	delete(names, "_")
	return names
}

// The rewrite is made once per exercise per grader run, and again when a
// hidden test, stub or given file changes; each run draws a new prefix.
func TestHiddenTestsCached(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxLimits)
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	first, err := g.hiddenTests(context.Background(), ex)
	require.NoError(t, err)
	assert.Regexp(t, `^hidden_[0-9a-f]{16}_$`, first.prefix)
	assert.Contains(t, string(first.files[0].data), "func "+first.prefix+"tallyOfTheHiddenTests(xs []int) int {")
	again, err := g.hiddenTests(context.Background(), ex)
	require.NoError(t, err)
	assert.Same(t, first, again)

	writeFile(t, c.Root, "exercises/01-toy/given.go", "package toy\n\nfunc sample() []int { return []int{3, 1, 4, 1, 5} }\n")
	changed, err := g.hiddenTests(context.Background(), ex)
	require.NoError(t, err)
	assert.NotEqual(t, first.prefix, changed.prefix)

	other, _ := newGrader(t, c, SandboxLimits)
	run2, err := other.hiddenTests(context.Background(), ex)
	require.NoError(t, err)
	assert.NotEqual(t, changed.prefix, run2.prefix)
}
