package grader

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	Verified int      // exercises whose checks all passed
	Failed   []string // "NN-name: what is wrong"
}

// Verify checks the exercises named (all with hidden tests when names is
// empty): each layout is sound, the reference solution scores full marks
// and passes the public tests, and the untouched stub scores zero on every
// hidden test. jobs exercises are checked at once; one line per exercise
// goes to w.
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
	jobs = max(1, jobs)
	var mu sync.Mutex
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	var fatal error
	for _, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			start := time.Now()
			line, problems, err := g.verifyOne(ctx, name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if fatal == nil {
					fatal = err
				}
				return
			}
			if len(problems) == 0 {
				rep.Verified++
				fmt.Fprintf(w, "verify %-28s ok    %s (%.1f s)\n", name, line, time.Since(start).Seconds())
				return
			}
			fmt.Fprintf(w, "verify %-28s FAIL  %s (%.1f s)\n", name, line, time.Since(start).Seconds())
			for _, p := range problems {
				fmt.Fprintf(w, "    %s\n", strings.ReplaceAll(p, "\n", "\n    "))
				rep.Failed = append(rep.Failed, name+": "+p)
			}
		}()
	}
	wg.Wait()
	if fatal != nil {
		return rep, fatal
	}
	fmt.Fprintf(w, "verify: %d of %d exercises verified", rep.Verified, len(names))
	if n := len(names) - rep.Verified; n > 0 {
		fmt.Fprintf(w, ", %d failed", n)
	}
	fmt.Fprintln(w)
	return rep, nil
}

// verifyOne verifies one exercise. Problems are the exercise's; an error is
// the grader's.
func (g *Grader) verifyOne(ctx context.Context, name string) (string, []string, error) {
	ex, err := g.Course.Exercise(name)
	if err != nil {
		return "", []string{err.Error()}, nil
	}
	if ex.Spec == nil {
		return "", []string{"no grade.json in " + ex.HiddenDir}, nil
	}
	if problems := layoutProblems(ex); len(problems) > 0 {
		return "layout", problems, nil
	}
	var problems []string
	sol, err := g.Grade(ctx, ex, ex.SolutionDir)
	if err != nil {
		return "", nil, err
	}
	for _, t := range sol.Tests {
		if !t.Passed() {
			problems = append(problems, fmt.Sprintf("the solution fails %s:\n%s", t.Name, strings.TrimSpace(t.Output)))
		}
	}
	if sol.Output != "" {
		problems = append(problems, "grading the solution: "+sol.Output)
	}
	stub, err := g.Grade(ctx, ex, ex.Dir)
	if err != nil {
		return "", nil, err
	}
	for _, t := range stub.Tests {
		if t.Passed() {
			problems = append(problems, fmt.Sprintf("the stub passes %s: that test must fail until the exercise is done", t.Name))
		}
	}
	if stub.Output != "" {
		problems = append(problems, "grading the stub: "+stub.Output)
	}
	pub, err := g.Check(ctx, ex, ex.SolutionDir)
	if err != nil {
		problems = append(problems, "public tests on the solution: "+err.Error())
	} else {
		for _, t := range pub.Tests {
			if !t.Passed() {
				problems = append(problems, fmt.Sprintf("the solution fails the public test %s:\n%s", t.Name, strings.TrimSpace(t.Output)))
			}
		}
		if pub.Output != "" {
			problems = append(problems, "public tests on the solution: "+pub.Output)
		}
	}
	line := fmt.Sprintf("solution %d/%d, stub %d/%d, %d public tests", sol.Score, sol.MaxScore, stub.Score, stub.MaxScore, len(pub.testsOrNil()))
	return line, problems, nil
}

func (r *Result) testsOrNil() []TestResult {
	if r == nil {
		return nil
	}
	return r.Tests
}

// layoutProblems checks the exercise's folders against the format: the
// student files exist in both editions, the given helpers and public tests
// are the same in both, packages match, and every graded test exists.
func layoutProblems(ex *Exercise) []string {
	var problems []string
	spec := ex.Spec
	for _, dir := range []string{ex.Dir, ex.SolutionDir} {
		for _, f := range spec.StudentFiles {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				problems = append(problems, fmt.Sprintf("student file %s is missing from %s", f, dir))
			}
		}
		if pkg, err := packageOf(dir); err != nil || pkg != spec.Package {
			problems = append(problems, fmt.Sprintf("%s is not package %s (grade.json's package)", dir, spec.Package))
		}
	}
	for _, tests := range []bool{false, true} {
		inExercise, _ := goFiles(ex.Dir, tests)
		inSolution, _ := goFiles(ex.SolutionDir, tests)
		for _, f := range union(inExercise, inSolution) {
			if spec.isStudentFile(f) {
				continue
			}
			a, errA := os.ReadFile(filepath.Join(ex.Dir, f))
			b, errB := os.ReadFile(filepath.Join(ex.SolutionDir, f))
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				problems = append(problems, fmt.Sprintf("%s differs between exercises/ and solutions/ (only the student files may differ)", f))
			}
		}
	}
	for _, dir := range []string{ex.Dir, ex.SolutionDir} {
		if _, err := testFuncs(dir, spec.Package); err != nil {
			problems = append(problems, err.Error())
		}
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
		problems = append(problems, fmt.Sprintf("%s holds non-test files %v; hidden files must be *_test.go", ex.HiddenDir, nonTest))
	}
	return problems
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range append(append([]string{}, a...), b...) {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
