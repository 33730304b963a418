package grader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// ModulePath is the course's module path; a course root is the folder whose
// go.mod declares it.
const ModulePath = "github.com/gpumem/course"

// Course is a checkout of the course: go.mod, exercises/, solutions/ and
// grader/hidden/ under Root.
type Course struct {
	Root string
}

// FindCourse returns the course that holds dir: dir itself or the nearest
// parent whose go.mod declares ModulePath.
func FindCourse(dir string) (*Course, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("grader: %w", err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		if isCourseRoot(d) {
			return &Course{Root: d}, nil
		}
		if filepath.Dir(d) == d {
			return nil, fmt.Errorf("grader: %s is not inside the course (no go.mod of %s above it); run from the course folder or pass --course", abs, ModulePath)
		}
	}
}

// OpenCourse returns the course at root, which must hold its go.mod.
func OpenCourse(root string) (*Course, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("grader: %w", err)
	}
	if !isCourseRoot(abs) {
		return nil, fmt.Errorf("grader: %s is not the course root (its go.mod does not declare module %s)", abs, ModulePath)
	}
	return &Course{Root: abs}, nil
}

var moduleLine = regexp.MustCompile(`(?m)^module\s+"?([^"\s]+)"?\s*$`)

func isCourseRoot(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	m := moduleLine.FindSubmatch(data)
	return m != nil && string(m[1]) == ModulePath
}

// ErrNoExercise is wrapped by the error of Exercise for a name that is not
// an exercise of the course.
var ErrNoExercise = errors.New("no such exercise")

// exerciseName is NN-name: two digits, a dash, lower-case words.
var exerciseName = regexp.MustCompile(`^[0-9]{2}-[a-z0-9]+(-[a-z0-9]+)*$`)

// IsExerciseName reports whether name has an exercise's form, NN-name.
func IsExerciseName(name string) bool { return exerciseName.MatchString(name) }

// Exercises lists the exercises that have hidden tests (grade.json), sorted.
func (c *Course) Exercises() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(c.Root, "grader", "hidden"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("grader: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && exerciseName.MatchString(e.Name()) {
			if _, err := os.Stat(filepath.Join(c.Root, "grader", "hidden", e.Name(), "grade.json")); err == nil {
				names = append(names, e.Name())
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

// Exercise is one exercise of a course. Spec is nil in a student edition,
// which has no hidden tests.
type Exercise struct {
	Name        string
	Dir         string // exercises/NN-name: the stub, given helpers, public tests
	SolutionDir string // solutions/NN-name: the reference's student files, extras/ and mutants/
	HiddenDir   string // grader/hidden/NN-name
	Package     string // the Go package name
	Spec        *Spec
}

// Exercise loads the exercise called name ("01-shared-storage").
func (c *Course) Exercise(name string) (*Exercise, error) {
	if !exerciseName.MatchString(name) {
		return nil, fmt.Errorf("grader: %q is not an exercise name (NN-name, like 01-shared-storage): %w", name, ErrNoExercise)
	}
	ex := &Exercise{
		Name:        name,
		Dir:         filepath.Join(c.Root, "exercises", name),
		SolutionDir: filepath.Join(c.Root, "solutions", name),
		HiddenDir:   filepath.Join(c.Root, "grader", "hidden", name),
	}
	if info, err := os.Stat(ex.Dir); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("grader: %w %s: %s is missing (the exercises are: %s)", ErrNoExercise, name, ex.Dir, c.exerciseDirs())
	}
	data, err := os.ReadFile(filepath.Join(ex.HiddenDir, "grade.json"))
	switch {
	case err == nil:
		spec, err := ParseSpec(data)
		if err != nil {
			return nil, fmt.Errorf("grader: %s: %w", filepath.Join(ex.HiddenDir, "grade.json"), err)
		}
		if spec.Exercise != name {
			return nil, fmt.Errorf("grader: %s/grade.json names exercise %q, not %q", ex.HiddenDir, spec.Exercise, name)
		}
		ex.Spec = spec
		ex.Package = spec.Package
	case errors.Is(err, os.ErrNotExist):
		pkg, err := packageOf(ex.Dir)
		if err != nil {
			return nil, err
		}
		ex.Package = pkg
	default:
		return nil, fmt.Errorf("grader: %w", err)
	}
	return ex, nil
}

func (c *Course) exerciseDirs() string {
	entries, _ := os.ReadDir(filepath.Join(c.Root, "exercises"))
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return "none yet"
	}
	return strings.Join(names, ", ")
}

// packageOf returns the package name of the non-test Go files in dir.
func packageOf(dir string) (string, error) {
	files, err := goFiles(dir, false)
	if err != nil {
		return "", err
	}
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, f), nil, parser.PackageClauseOnly)
		if err == nil {
			return parsed.Name.Name, nil
		}
	}
	return "", fmt.Errorf("grader: no Go package in %s", dir)
}

// goFiles lists the .go files directly in dir, test files or the others.
func goFiles(dir string, tests bool) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("grader: %w", err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(n, ".go") || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
			continue
		}
		if strings.HasSuffix(n, "_test.go") == tests {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// testFuncs returns the names of the Test functions declared in the test
// files of dir, and an error for a layout the grader cannot run: a TestMain
// (the grader adds its own), an external _test package, or a file of
// another package.
func testFuncs(dir, pkg string) ([]string, error) {
	files, err := goFiles(dir, true)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, f), nil, 0)
		if err != nil {
			return nil, fmt.Errorf("grader: %w", err)
		}
		if parsed.Name.Name != pkg {
			return nil, fmt.Errorf("grader: %s declares package %s; tests must be in package %s (the grader compiles them with the submission)", filepath.Join(dir, f), parsed.Name.Name, pkg)
		}
		for _, d := range parsed.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			switch name := fn.Name.Name; {
			case name == "TestMain":
				return nil, fmt.Errorf("grader: %s declares TestMain; remove it (the grader adds its own)", filepath.Join(dir, f))
			case isTestName(name):
				names = append(names, name)
			}
		}
	}
	return names, nil
}

func isTestName(name string) bool { return testPrefixed(name, "Test") }

// testPrefixed reports whether name is one go test takes for a function of
// the kind prefix says (Test, Benchmark, Example, Fuzz): the prefix, then
// nothing or no lower-case letter.
func testPrefixed(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	return ok && (rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z'))
}

// Spec is an exercise's grade.json.
type Spec struct {
	Exercise       string   `json:"exercise"`
	Package        string   `json:"package"`
	StudentFiles   []string `json:"student_files"`
	TimeoutSeconds int      `json:"timeout_seconds,omitempty"`
	MemoryMB       int      `json:"memory_mb,omitempty"`
	// Imports are the packages a student file may import (DefaultImports
	// when nil); Names, objects of other packages it may use
	// (DefaultNames when nil). Note [Allow, do not deny].
	Imports []string   `json:"imports,omitempty"`
	Names   []string   `json:"names,omitempty"`
	Tests   []TestSpec `json:"tests"`
}

// TestSpec is one graded test of a Spec.
type TestSpec struct {
	Name        string `json:"name"`
	Points      int    `json:"points"`
	Visibility  string `json:"visibility,omitempty"`
	Description string `json:"description,omitempty"`
}

// Defaults for a Spec that leaves them out, and the bounds ParseSpec accepts.
const (
	DefaultTimeoutSeconds = 60
	DefaultMemoryMB       = 4096
	maxTimeoutSeconds     = 3600
	maxMemoryMB           = 1 << 20
	maxPoints             = 1000
	maxTests              = 100
)

var (
	identifier  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	visibleKind = map[string]bool{"visible": true, "hidden": true, "after_due_date": true, "after_published": true}
)

// ParseSpec decodes and checks a grade.json. Unknown fields are refused, so
// a typo never silently changes grading.
func ParseSpec(data []byte) (*Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("grade.json: %w", err)
	}
	if dec.More() {
		return nil, errors.New("grade.json: text after the JSON object")
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("grade.json: %w", err)
	}
	return &s, nil
}

func (s *Spec) check() error {
	if !exerciseName.MatchString(s.Exercise) {
		return fmt.Errorf("exercise %q is not NN-name", s.Exercise)
	}
	if !identifier.MatchString(s.Package) || s.Package == "main" {
		return fmt.Errorf("package %q is not a Go package name", s.Package)
	}
	if len(s.StudentFiles) == 0 {
		return errors.New("student_files is empty: name the files the student edits")
	}
	seen := map[string]bool{}
	for _, f := range s.StudentFiles {
		if f != filepath.Base(f) || !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || strings.HasPrefix(f, ".") {
			return fmt.Errorf("student file %q must be a plain .go file name in the exercise folder (no path, not a test)", f)
		}
		if seen[f] {
			return fmt.Errorf("student file %q listed twice", f)
		}
		seen[f] = true
	}
	if s.TimeoutSeconds < 0 || s.TimeoutSeconds > maxTimeoutSeconds {
		return fmt.Errorf("timeout_seconds %d is outside 1..%d", s.TimeoutSeconds, maxTimeoutSeconds)
	}
	if s.MemoryMB < 0 || s.MemoryMB > maxMemoryMB {
		return fmt.Errorf("memory_mb %d is outside 1..%d", s.MemoryMB, maxMemoryMB)
	}
	if err := checkNames(s.Imports, s.Names); err != nil {
		return err
	}
	if len(s.Tests) == 0 || len(s.Tests) > maxTests {
		return fmt.Errorf("%d tests; an exercise grades 1 to %d", len(s.Tests), maxTests)
	}
	names := map[string]bool{}
	for i, t := range s.Tests {
		if !identifier.MatchString(t.Name) || !isTestName(t.Name) {
			return fmt.Errorf("test %d: %q is not a Go test function name (TestXxx)", i, t.Name)
		}
		if names[t.Name] {
			return fmt.Errorf("test %s listed twice", t.Name)
		}
		names[t.Name] = true
		if t.Points <= 0 || t.Points > maxPoints {
			return fmt.Errorf("test %s: points %d is outside 1..%d", t.Name, t.Points, maxPoints)
		}
		if t.Visibility != "" && !visibleKind[t.Visibility] {
			return fmt.Errorf("test %s: visibility %q is not visible, hidden, after_due_date or after_published", t.Name, t.Visibility)
		}
	}
	return nil
}

// Timeout is the wall-clock limit of one test process, in seconds.
func (s *Spec) Timeout() int {
	if s == nil || s.TimeoutSeconds == 0 {
		return DefaultTimeoutSeconds
	}
	return s.TimeoutSeconds
}

// Memory is the address-space limit of one test process, in MiB.
func (s *Spec) Memory() int {
	if s == nil || s.MemoryMB == 0 {
		return DefaultMemoryMB
	}
	return s.MemoryMB
}

// MaxScore is the sum of the tests' points.
func (s *Spec) MaxScore() int {
	total := 0
	for _, t := range s.Tests {
		total += t.Points
	}
	return total
}

// isStudentFile reports whether name is one the student edits.
func (s *Spec) isStudentFile(name string) bool {
	for _, f := range s.StudentFiles {
		if f == name {
			return true
		}
	}
	return false
}
