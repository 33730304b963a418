package grader

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpumem/course/grader/sandbox"
)

// What verify asks of every exercise.
const (
	// verifyRuns is how many times every graded test of a reference or
	// extras runs on its build, and every graded test a mutant fails: a
	// test whose outcome depends on when Go's collector runs, or on
	// scheduling, shows as a difference. A test a mutant passes runs once:
	// the reference and extras already run it again, and whether a wrong
	// answer passes one more test by chance does not change that it loses
	// points (06-snapshot-whatif's verify: 70 s → 63 s).
	verifyRuns = 2
	minMutants = 3
	minExtras  = 1
)

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	Verified int      // exercises whose checks all passed
	Failed   []string // "NN-name: what is wrong"
	Extras   int      // right answers with harmless extras that kept full marks
	Mutants  int      // mutants that lost points
	// Uncaught lists, as "NN-name TestName", the graded tests that no
	// mutant fails: a hint for authors (a test that catches nothing, or a
	// mistake that has no mutant yet), not a failure.
	Uncaught []string
}

// Verify checks the exercises named (all with hidden tests when names is
// empty): each layout is sound; the reference solution and each right
// answer with harmless extras score full marks; each mutant loses points;
// no test changes its outcome when it runs again (for a mutant, each test
// it fails runs again); the untouched stub scores zero on every hidden
// test; and the public tests pass with the reference laid over the
// exercise. jobs submissions are graded at once, across exercises; one
// line per exercise goes to w.
func (g *Grader) Verify(ctx context.Context, names []string, jobs int, w io.Writer) (VerifyReport, error) {
	var rep VerifyReport
	if len(names) == 0 {
		all, err := g.Course.Exercises()
		if err != nil {
			return rep, err
		}
		names = all
		// In an instructor's course every exercise needs hidden tests; a
		// student edition has none at all.
		if _, err := os.Stat(filepath.Join(g.Course.Root, "grader", "hidden")); err == nil {
			entries, _ := os.ReadDir(filepath.Join(g.Course.Root, "exercises"))
			for _, e := range entries {
				if e.IsDir() && exerciseName.MatchString(e.Name()) && !contains(all, e.Name()) {
					fmt.Fprintf(w, "verify %-28s FAIL  no hidden tests: grader/hidden/%s/grade.json is missing\n", e.Name(), e.Name())
					rep.Failed = append(rep.Failed, e.Name()+": no hidden tests")
				}
			}
		}
	}
	if len(names) == 0 {
		fmt.Fprintln(w, "verify: no exercise has hidden tests in grader/hidden: 0 exercises verified")
		return rep, nil
	}
	v := &verifier{g: g, again: g.withRuns(verifyRuns), mutant: g.withRunsIfFailed(verifyRuns), sem: make(chan struct{}, max(1, jobs))}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var fatal error
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := v.exercise(ctx, name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if fatal == nil {
					fatal = err
				}
				return
			}
			rep.Extras += out.extras
			rep.Mutants += out.mutants
			for _, t := range out.uncaught {
				rep.Uncaught = append(rep.Uncaught, name+" "+t)
			}
			verdict := "ok  "
			if len(out.problems) == 0 {
				rep.Verified++
			} else {
				verdict = "FAIL"
			}
			fmt.Fprintf(w, "verify %-28s %s  %s (%.1f s of grading)\n", name, verdict, out.line, out.busy.Seconds())
			if len(out.uncaught) > 0 {
				fmt.Fprintf(w, "    no mutant fails %s\n", strings.Join(out.uncaught, ", "))
			}
			for _, p := range out.problems {
				fmt.Fprintf(w, "    %s\n", strings.ReplaceAll(p, "\n", "\n    "))
				rep.Failed = append(rep.Failed, name+": "+p)
			}
		}()
	}
	wg.Wait()
	if fatal != nil {
		return rep, fatal
	}
	slices.Sort(rep.Uncaught)
	fmt.Fprintf(w, "verify: %d of %d exercises verified", rep.Verified, len(names))
	if n := len(names) - rep.Verified; n > 0 {
		fmt.Fprintf(w, ", %d failed", n)
	}
	fmt.Fprintf(w, "; %d right answers with extras kept full marks, %d mutants lost points (the references' and extras' tests and the tests a mutant failed ran %d times); %d graded tests no mutant fails\n",
		rep.Extras, rep.Mutants, verifyRuns, len(rep.Uncaught))
	return rep, nil
}

// withRuns is a copy of g that runs every graded test n times and notes
// in the Result the tests whose outcome changed.
func (g *Grader) withRuns(n int) *Grader {
	c := *g
	c.runs = n
	return &c
}

// withRunsIfFailed is withRuns for a mutant: a test runs n times only when
// it failed the first time.
func (g *Grader) withRunsIfFailed(n int) *Grader {
	c := g.withRuns(n)
	c.againIfFailed = true
	return c
}

// runAgain runs the test tr is the result of g.runs-1 more times on the
// same binary (with againIfFailed, only when tr failed) and notes in res
// each run whose outcome differs from tr's.
func (g *Grader) runAgain(ctx context.Context, bin *binary, limits sandbox.Limits, red *redactor, tr TestResult, res *Result) error {
	if g.againIfFailed && tr.Passed() {
		return nil
	}
	for i := 2; i <= g.runs; i++ {
		again := TestResult{Name: tr.Name}
		if err := g.runTest(ctx, bin, tr.Name, limits, red, &again); err != nil {
			return err
		}
		if again.Status != tr.Status {
			out := again.Output
			if !again.Passed() {
				out = tr.Output
			}
			res.unstable = append(res.unstable, fmt.Sprintf("%s %s on run 1 and %s on run %d: %s", tr.Name, tr.Status, again.Status, i, strings.TrimSpace(out)))
		}
	}
	return nil
}

// verifier verifies exercises; sem bounds the submissions graded at once.
type verifier struct {
	g      *Grader // runs each test once: the stub, the public tests
	again  *Grader // runs each test verifyRuns times: the reference, extras
	mutant *Grader // runs each test it fails verifyRuns times: mutants
	sem    chan struct{}
}

// verified is what verifying one exercise found.
type verified struct {
	line     string
	problems []string
	extras   int
	mutants  int
	uncaught []string
	busy     time.Duration // the time its submissions took to grade, added up
}

// graded is one submission of verify and its result.
type graded struct {
	label   string   // "the solution", "extras NAME (what it adds)", ...
	variant *Variant // nil for the reference, the stub and the public tests
	res     *Result
	err     error
}

// exercise verifies one exercise. Problems are the exercise's; an error is
// the grader's.
func (v *verifier) exercise(ctx context.Context, name string) (verified, error) {
	var out verified
	ex, err := v.g.Course.Exercise(name)
	if err != nil {
		out.problems = []string{err.Error()}
		return out, nil
	}
	if ex.Spec == nil {
		out.problems = []string{"no grade.json in " + ex.HiddenDir}
		return out, nil
	}
	variants, err := ex.Variants()
	if err != nil {
		return out, err
	}
	if out.problems = layoutProblems(v.g.Course, ex, variants); len(out.problems) > 0 {
		out.line = "layout"
		return out, nil
	}
	// Once for all the exercise's submissions (the grader's cache).
	if _, err := v.g.hiddenTests(ctx, ex); err != nil {
		var herr *hiddenTestsError
		if !errors.As(err, &herr) {
			return out, err
		}
		out.problems, out.line = []string{herr.Error()}, "hidden tests"
		return out, nil
	}
	tmp, err := os.MkdirTemp("", "grader-verify-")
	if err != nil {
		return out, fmt.Errorf("grader: %w", err)
	}
	defer os.RemoveAll(tmp)

	ref := &graded{label: "the solution"}
	stub := &graded{label: "the stub"}
	pub := &graded{label: "the public tests with the solution"}
	vars := make([]*graded, len(variants))
	var wg sync.WaitGroup
	run := func(gr *graded, grade func() (*Result, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case v.sem <- struct{}{}:
			case <-ctx.Done():
				gr.err = ctx.Err()
				return
			}
			defer func() { <-v.sem }()
			gr.res, gr.err = grade()
		}()
	}
	run(ref, func() (*Result, error) { return v.again.Grade(ctx, ex, ex.SolutionDir) })
	run(stub, func() (*Result, error) { return v.g.Grade(ctx, ex, ex.Dir) })
	run(pub, func() (*Result, error) {
		dir, err := overlay(filepath.Join(tmp, "public"), ex.SolutionDir, ex.Spec.StudentFiles, ex.Dir)
		if err != nil {
			return nil, err
		}
		return v.g.Check(ctx, ex, dir)
	})
	for i := range variants {
		vr := &variants[i]
		vars[i] = &graded{label: fmt.Sprintf("%s %s (%s)", vr.Kind(), vr.Name, vr.Says), variant: vr}
		run(vars[i], func() (*Result, error) {
			dir := filepath.Join(tmp, vr.Kind()+"-"+vr.Name)
			if err := ex.WriteVariant(*vr, dir); err != nil {
				return nil, err
			}
			if vr.Mutant {
				return v.mutant.Grade(ctx, ex, dir)
			}
			return v.again.Grade(ctx, ex, dir)
		})
	}
	wg.Wait()
	if pub.err != nil && ctx.Err() == nil {
		// The exercise's public tests cannot run (none, or a layout the
		// grader refuses): the exercise's problem, not the grader's.
		out.problems = append(out.problems, "public tests on the solution: "+pub.err.Error())
		pub.res, pub.err = &Result{}, nil
	}
	for _, gr := range append([]*graded{ref, stub, pub}, vars...) {
		if gr.err != nil {
			return out, gr.err
		}
		out.busy += gr.res.ExecutionTime
	}

	full := ex.Spec.MaxScore()
	fullMarks := func(gr *graded) {
		for _, t := range gr.res.Tests {
			if !t.Passed() {
				out.problems = append(out.problems, fmt.Sprintf("%s fails %s:\n%s", gr.label, t.Name, strings.TrimSpace(t.Output)))
			}
		}
		if gr.res.Output != "" {
			out.problems = append(out.problems, "grading "+gr.label+": "+gr.res.Output)
		}
	}
	stable := func(gr *graded) {
		for _, u := range gr.res.unstable {
			out.problems = append(out.problems, fmt.Sprintf("%s is not graded the same twice: %s", gr.label, u))
		}
	}
	// What a student reads must read well: no formatting slip and no Go
	// value dumped as the runtime prints it, in any feedback.
	for _, gr := range append([]*graded{ref, stub, pub}, vars...) {
		texts := []string{gr.res.Output}
		for _, t := range gr.res.Tests {
			texts = append(texts, t.Output)
		}
		for _, text := range texts {
			if slip := feedbackSlip(text); slip != "" {
				out.problems = append(out.problems, fmt.Sprintf("the feedback on %s shows %s: %q", gr.label, slip, excerpt(text, slip)))
				break
			}
		}
	}
	fullMarks(ref)
	stable(ref)
	caught := map[string]bool{}
	for _, gr := range vars {
		stable(gr)
		if !gr.variant.Mutant {
			fullMarks(gr)
			if len(gr.res.unstable) == 0 && gr.res.Score == full && gr.res.Output == "" {
				out.extras++
			}
			continue
		}
		switch {
		case gr.res.Status != "graded" || gr.res.Output != "":
			out.problems = append(out.problems, fmt.Sprintf("%s must compile and be graded, as a student's plausible mistake would: %s", gr.label, gr.res.Output))
		case gr.res.Score == full:
			out.problems = append(out.problems, fmt.Sprintf("%s keeps full marks: no hidden test catches that mistake", gr.label))
		case len(gr.res.unstable) == 0:
			out.mutants++
		}
		for _, t := range gr.res.Tests {
			if !t.Passed() {
				caught[t.Name] = true
			}
		}
	}
	for _, t := range ex.Spec.Tests {
		if !caught[t.Name] {
			out.uncaught = append(out.uncaught, t.Name)
		}
	}
	for _, t := range stub.res.Tests {
		if t.Passed() {
			out.problems = append(out.problems, fmt.Sprintf("the stub passes %s: that test must fail until the exercise is done", t.Name))
		}
	}
	if stub.res.Output != "" {
		out.problems = append(out.problems, "grading the stub: "+stub.res.Output)
	}
	for _, t := range pub.res.Tests {
		if !t.Passed() {
			out.problems = append(out.problems, fmt.Sprintf("the solution fails the public test %s:\n%s", t.Name, strings.TrimSpace(t.Output)))
		}
	}
	if pub.res.Output != "" {
		out.problems = append(out.problems, "public tests on the solution: "+pub.res.Output)
	}
	scores := func(mutant bool) string {
		var list []string
		for _, gr := range vars {
			if gr.variant.Mutant == mutant {
				list = append(list, fmt.Sprintf("%d/%d", gr.res.Score, full))
			}
		}
		return strings.Join(list, " ")
	}
	out.line = fmt.Sprintf("solution %d/%d, extras %s, mutants %s, stub %d/%d, %d public tests",
		ref.res.Score, full, scores(false), scores(true), stub.res.Score, stub.res.MaxScore, len(pub.res.Tests))
	return out, nil
}

// overlay makes dir a submission folder: the .go files of base, with the
// student files found in top replacing base's. It returns dir.
func overlay(dir, top string, studentFiles []string, base string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("grader: %w", err)
	}
	names, err := exerciseFiles(base)
	if err != nil {
		return "", err
	}
	for _, f := range names {
		src := filepath.Join(base, f)
		if contains(studentFiles, f) {
			if _, err := os.Stat(filepath.Join(top, f)); err == nil {
				src = filepath.Join(top, f)
			}
		}
		if err := copyFile(src, filepath.Join(dir, f)); err != nil {
			return "", err
		}
	}
	for _, f := range studentFiles {
		if contains(names, f) {
			continue
		}
		if _, err := os.Stat(filepath.Join(top, f)); err == nil {
			if err := copyFile(filepath.Join(top, f), filepath.Join(dir, f)); err != nil {
				return "", err
			}
		}
	}
	return dir, nil
}

// layoutProblems checks the exercise's folders against the format: the
// stub and the reference hold the student files (the reference nothing
// else but its folders of variants, which hold only patches), every
// variant says what it changes and applies to the reference, changing
// only student files, packages match, every graded test exists, and no
// hidden test or given file declares a package-level variable the
// student's code could change.
func layoutProblems(c *Course, ex *Exercise, variants []Variant) []string {
	var problems []string
	spec := ex.Spec
	rel := func(p string) string {
		if r, err := filepath.Rel(c.Root, p); err == nil {
			return r
		}
		return p
	}
	for _, f := range spec.StudentFiles {
		if _, err := os.Stat(filepath.Join(ex.Dir, f)); err != nil {
			problems = append(problems, fmt.Sprintf("student file %s is missing from %s", f, rel(ex.Dir)))
		}
	}
	if pkg, err := packageOf(ex.Dir); err != nil || pkg != spec.Package {
		problems = append(problems, fmt.Sprintf("%s is not package %s (grade.json's package)", rel(ex.Dir), spec.Package))
	}
	problems = append(problems, solutionFilesOnly(rel(ex.SolutionDir), ex.SolutionDir, spec)...)
	for _, kind := range []string{extrasDir, mutantsDir} {
		entries, _ := os.ReadDir(filepath.Join(ex.SolutionDir, kind))
		for _, e := range entries {
			if _, ok := variantName(e); !ok {
				problems = append(problems, fmt.Sprintf("%s holds %s: it may hold only NAME%s files, unified diffs against the reference's student files", rel(filepath.Join(ex.SolutionDir, kind)), e.Name(), patchExt))
			}
		}
	}
	mutants, extras := 0, 0
	for _, vr := range variants {
		if vr.Says == "" {
			problems = append(problems, fmt.Sprintf("%s: it must open with a line \"%swhat it changes\" before the diff", ex.variantName(vr), vr.word()))
		}
		if _, err := ex.VariantFiles(vr); err != nil {
			problems = append(problems, err.Error())
		}
		if vr.Mutant {
			mutants++
		} else {
			extras++
		}
	}
	if mutants < minMutants {
		problems = append(problems, fmt.Sprintf("%d mutants in %s; an exercise needs at least %d plausible wrong solutions that must lose points", mutants, rel(filepath.Join(ex.SolutionDir, mutantsDir)), minMutants))
	}
	if extras < minExtras {
		problems = append(problems, fmt.Sprintf("%d right answers with extras in %s; an exercise needs at least %d that must keep full marks", extras, rel(filepath.Join(ex.SolutionDir, extrasDir)), minExtras))
	}
	if _, err := testFuncs(ex.Dir, spec.Package); err != nil {
		problems = append(problems, err.Error())
	}
	funcs, err := testFuncs(ex.HiddenDir, spec.Package)
	if err != nil {
		return append(problems, err.Error())
	}
	for _, t := range spec.Tests {
		if !contains(funcs, t.Name) {
			problems = append(problems, fmt.Sprintf("grade.json grades %s, which no hidden test declares", t.Name))
		}
	}
	nonTest, _ := goFiles(ex.HiddenDir, false)
	if len(nonTest) > 0 {
		problems = append(problems, fmt.Sprintf("%s holds non-test files %v; hidden files must be *_test.go", rel(ex.HiddenDir), nonTest))
	}
	hidden, _ := goFiles(ex.HiddenDir, true)
	given, _ := goFiles(ex.Dir, false)
	for _, dir := range []struct {
		path  string
		files []string
	}{{ex.HiddenDir, hidden}, {ex.Dir, given}} {
		for _, f := range dir.files {
			if spec.isStudentFile(f) {
				continue
			}
			for _, name := range packageVars(filepath.Join(dir.path, f)) {
				problems = append(problems, fmt.Sprintf("%s declares the package-level variable %s, which the student's code shares and could change (an init that sets it); declare it inside the functions that use it, or make it a constant", rel(filepath.Join(dir.path, f)), name))
			}
		}
	}
	return problems
}

// solutionFilesOnly checks that the reference solution's folder dir holds
// all the student files and nothing else but the extras and mutants
// folders.
func solutionFilesOnly(name, dir string, spec *Spec) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", name, err)}
	}
	var problems []string
	found := 0
	for _, e := range entries {
		switch {
		case e.Type().IsRegular() && spec.isStudentFile(e.Name()):
			found++
			if pkg, err := packageOf(filepath.Join(dir, e.Name())); err == nil && pkg != spec.Package {
				problems = append(problems, fmt.Sprintf("%s/%s is package %s, not %s (grade.json's package)", name, e.Name(), pkg, spec.Package))
			}
		case e.IsDir() && (e.Name() == extrasDir || e.Name() == mutantsDir):
		default:
			problems = append(problems, fmt.Sprintf("%s holds %s: it may hold only the student files %v (the grader lays them over the exercise)", name, e.Name(), spec.StudentFiles))
		}
	}
	if found < len(spec.StudentFiles) {
		problems = append(problems, fmt.Sprintf("%s lacks student files: it holds %d of %v", name, found, spec.StudentFiles))
	}
	return problems
}

// packageVars lists the package-level variables the Go file at path
// declares (blank ones aside); a file that does not parse has none here
// (building it reports why).
func packageVars(path string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	var names []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, spec := range gd.Specs {
			for _, n := range spec.(*ast.ValueSpec).Names {
				if n.Name != "_" {
					names = append(names, n.Name)
				}
			}
		}
	}
	return names
}

// goValueDump matches a Go value printed with %v or %+v of a struct (a
// pointer's &{...}, a named struct's fields, a mutex): what a student
// cannot read. (A panic's stack, with its frames' raw arguments, is not one:
// it says where the code stopped.)
var goValueDump = regexp.MustCompile(`&?\b[a-z][a-z0-9]*\.[A-Z][A-Za-z0-9]*\{[a-z][A-Za-z0-9]*:|sync\.(Mutex|RWMutex)\{`)

// feedbackSlip names the first formatting slip in a feedback text: a fmt
// error (%!d(string=...)), a doubled percent sign printed as such, or a Go
// value dumped as the runtime prints it; "" when there is none.
func feedbackSlip(text string) string {
	switch {
	case strings.Contains(text, "%!"):
		return "%!"
	case strings.Contains(text, "%%"):
		return "%%"
	}
	if m := goValueDump.FindString(text); m != "" {
		return m
	}
	return ""
}

// excerpt is up to 80 characters of text around its first occurrence of s.
func excerpt(text, s string) string {
	i := strings.Index(text, s)
	if i < 0 {
		return text
	}
	lo, hi := max(0, i-40), min(len(text), i+len(s)+40)
	return text[lo:hi]
}
