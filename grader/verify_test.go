package grader

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeFile writes data at the slash path rel under root, making folders.
func writeFile(t *testing.T, root, rel, data string) {
	t.Helper()
	path := filepath.Join(root, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

func verifyFixture(t *testing.T, c *Course) (VerifyReport, string) {
	t.Helper()
	g, _ := newGrader(t, c, SandboxAuto)
	var out strings.Builder
	rep, err := g.Verify(context.Background(), []string{"01-toy"}, 2, &out)
	require.NoError(t, err)
	return rep, out.String()
}

const toySum = "package toy\n\n// Sum returns the sum of xs.\nfunc Sum(xs []int) (int, error) {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total, nil\n}\n"

// TestVerifyLayout: what verify refuses before grading anything.
func TestVerifyLayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, root string)
		want   string
	}{
		{"a solution with a given file", func(t *testing.T, root string) {
			writeFile(t, root, "solutions/01-toy/given.go", "package toy\n")
		}, "solutions/01-toy holds given.go: it may hold only the student files [sum.go reverse.go]"},
		{"a solution with a public test", func(t *testing.T, root string) {
			writeFile(t, root, "solutions/01-toy/toy_test.go", "package toy\n")
		}, "solutions/01-toy holds toy_test.go"},
		{"a solution without a student file", func(t *testing.T, root string) {
			require.NoError(t, os.Remove(filepath.Join(root, "solutions/01-toy/reverse.go")))
		}, "solutions/01-toy lacks student files: it holds 1 of [sum.go reverse.go]"},
		{"a mutant with a helper file", func(t *testing.T, root string) {
			writeFile(t, root, "solutions/01-toy/mutants/helper.patch", "Mutant: a helper file.\n\n--- /dev/null\n+++ b/helper.go\n@@ -0,0 +1 @@\n+package toy\n")
		}, "grader: solutions/01-toy/mutants/helper.patch changes helper.go, which is not one of the student files [sum.go reverse.go]"},
		{"an empty mutant", func(t *testing.T, root string) {
			writeFile(t, root, "solutions/01-toy/mutants/empty.patch", "Mutant: nothing at all.\n")
		}, "grader: solutions/01-toy/mutants/empty.patch changes no file"},
		{"a mutant that does not say its mistake", func(t *testing.T, root string) {
			writeFile(t, root, "solutions/01-toy/mutants/silent.patch", replaceDiff("", "sum.go", toySum, "package toy\n"))
		}, `solutions/01-toy/mutants/silent.patch: it must open with a line "Mutant: what it changes" before the diff`},
		{"an extra that says it is a mutant", func(t *testing.T, root string) {
			writeFile(t, root, "solutions/01-toy/extras/misnamed.patch", replaceDiff("Mutant: a comment.", "sum.go", toySum, toySum+"// A comment.\n"))
		}, `solutions/01-toy/extras/misnamed.patch: it must open with a line "Extra: what it changes" before the diff`},
		{"a variant folder of whole files", func(t *testing.T, root string) {
			writeFile(t, root, "solutions/01-toy/mutants/old/sum.go", "// Mutant: the old format.\n\n"+toySum)
		}, "solutions/01-toy/mutants holds old: it may hold only NAME.patch files, unified diffs against the reference's student files"},
		{"a reference changed under its variants", func(t *testing.T, root string) {
			writeFile(t, root, "solutions/01-toy/sum.go", strings.Replace(toySum, "total := 0", "var total int", 1))
		}, `grader: solutions/01-toy/mutants/sum-skips-last.patch: hunk 1 of sum.go (line 5, @@ -3,8 +3,8 @@) does not apply: line 5 of sum.go is "\tvar total int", the patch expects "\ttotal := 0" (the reference changed since the patch was made?)`},
		{"a patch that is not a diff", func(t *testing.T, root string) {
			writeFile(t, root, "solutions/01-toy/extras/prose.patch", "Extra: prose.\n\n--- a/sum.go\n+++ b/sum.go\nthen a story\n")
		}, "grader: solutions/01-toy/extras/prose.patch:5: sum.go has no hunks (@@ ...)"},
		{"too few mutants", func(t *testing.T, root string) {
			require.NoError(t, os.Remove(filepath.Join(root, "solutions/01-toy/mutants/sum-skips-last.patch")))
		}, "2 mutants in solutions/01-toy/mutants; an exercise needs at least 3"},
		{"no extras", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, "solutions/01-toy/extras")))
		}, "0 right answers with extras in solutions/01-toy/extras"},
		{"a hidden package-level variable", func(t *testing.T, root string) {
			writeFile(t, root, "grader/hidden/01-toy/more_test.go", "package toy\n\nvar _ = 1\n\nvar (\n\twant, other = 14, 2\n)\n")
		}, "grader/hidden/01-toy/more_test.go declares the package-level variable want, which the student's code shares and could change"},
		{"a given package-level variable", func(t *testing.T, root string) {
			writeFile(t, root, "exercises/01-toy/table.go", "package toy\n\nvar table = []int{1}\n")
		}, "exercises/01-toy/table.go declares the package-level variable table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := fixtureCourse(t)
			tc.change(t, c.Root)
			rep, out := verifyFixture(t, c)
			assert.Zero(t, rep.Verified, out)
			assert.Contains(t, strings.Join(rep.Failed, "\n"), tc.want)
			assert.Contains(t, out, "FAIL  layout")
		})
	}
}

// TestVerifyHiddenTestsRewritten: hidden tests that the grader cannot
// rewrite (Note [Reserved names of the hidden tests]) fail verify for
// their exercise, before anything is graded.
func TestVerifyHiddenTestsRewritten(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, want string }{
		{"package toy\n\nimport . \"strings\"\n\nfunc upper() string { return ToUpper(\"a\") }\n", "a dot-import (import . \"strings\")"},
		{"package toy\n\nfunc total() int { return Total(nil) }\n", "do not type-check with the exercise's stubs and given files"},
	} {
		c := fixtureCourse(t)
		writeFile(t, c.Root, "grader/hidden/01-toy/more_test.go", tc.src)
		rep, out := verifyFixture(t, c)
		assert.Zero(t, rep.Verified, out)
		assert.Contains(t, strings.Join(rep.Failed, "\n"), "01-toy: grader: the hidden tests of 01-toy: ")
		assert.Contains(t, strings.Join(rep.Failed, "\n"), tc.want)
		assert.Contains(t, out, "FAIL  hidden tests")
	}
}

// TestVerifyVariantsGraded: a mutant that keeps full marks, one that does
// not compile, extras that lose points and an exercise without public
// tests all fail verify; the others still count.
func TestVerifyVariantsGraded(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	writeFile(t, c.Root, "solutions/01-toy/mutants/harmless.patch", replaceDiff("Mutant: a comment that changes nothing.", "sum.go", toySum, "// A comment.\n"+toySum))
	writeFile(t, c.Root, "solutions/01-toy/mutants/broken.patch", replaceDiff("Mutant: does not compile.", "sum.go", toySum, "package toy\n\nfunc Sum(xs []int) (int, error) { return total(xs), nil }\n"))
	writeFile(t, c.Root, "solutions/01-toy/extras/wrong.patch", replaceDiff("Extra: not an extra at all.", "reverse.go", toyReverse, "package toy\n\nfunc Reverse(xs []int) error { return nil }\n"))
	require.NoError(t, os.Remove(filepath.Join(c.Root, "exercises/01-toy/toy_test.go")))
	rep, out := verifyFixture(t, c)
	assert.Zero(t, rep.Verified, out)
	failed := strings.Join(rep.Failed, "\n")
	assert.Contains(t, failed, "mutant harmless (a comment that changes nothing.) keeps full marks: no hidden test catches that mistake")
	assert.Contains(t, failed, "mutant broken (does not compile.) must compile and be graded")
	assert.Contains(t, failed, "extras wrong (not an extra at all.) fails TestReverse")
	assert.Contains(t, failed, "public tests on the solution: grader: ")
	assert.Contains(t, failed, "has no public tests")
	assert.Equal(t, 2, rep.Extras, "gc-and-helper and hidden-names still keep full marks")
	assert.Equal(t, 3, rep.Mutants, "the three fixture mutants still lose points")
	assert.Contains(t, out, "extras 7/7 7/7 4/7, mutants 3/7 7/7 4/7 6/7 4/7,", "sorted by name; broken is graded with the stub for sum.go")
}

// TestVerifyUncaughtTests: a test that no mutant fails is reported, not
// failed.
func TestVerifyUncaughtTests(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	require.NoError(t, os.Remove(filepath.Join(c.Root, "solutions/01-toy/mutants/sum-refuses-empty.patch")))
	writeFile(t, c.Root, "solutions/01-toy/mutants/sum-doubles.patch", replaceDiff("Mutant: counts every element twice.", "sum.go", toySum, strings.Replace(toySum, "total += x", "total += 2 * x", 1)))
	rep, out := verifyFixture(t, c)
	assert.Equal(t, 1, rep.Verified, out)
	assert.Equal(t, []string{"01-toy TestSumEmpty"}, rep.Uncaught)
	assert.Contains(t, out, "    no mutant fails TestSumEmpty\n")
	assert.Contains(t, out, "1 graded tests no mutant fails")
}

// flakyToy is a grader of the fixture course, its exercise 01-toy, and a
// submission of it whose Sum is wrong half of the time.
func flakyToy(t *testing.T) (*Grader, *Exercise, string) {
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxAuto)
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	flaky := t.TempDir()
	writeFile(t, flaky, "sum.go", "package toy\n\nimport \"time\"\n\nfunc Sum(xs []int) (int, error) {\n\ttotal := int(time.Now().UnixNano()/1000) % 2\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total, nil\n}\n")
	return g, ex, flaky
}

// TestGradeAgainFindsUnstableTests: a submission whose result depends on
// chance is caught when each test runs several times; a sound one is not.
func TestGradeAgainFindsUnstableTests(t *testing.T) {
	t.Parallel()
	g, ex, flaky := flakyToy(t)
	// Twelve runs of a test that fails half of the time agree with
	// probability 2^-11.
	res, err := g.withRuns(12).Grade(context.Background(), ex, flaky)
	require.NoError(t, err)
	require.NotEmpty(t, res.unstable)
	assert.Regexp(t, `^TestSum(Empty)? (passed|failed) on run 1 and (passed|failed) on run \d+: `, res.unstable[0])

	res, err = g.withRuns(3).Grade(context.Background(), ex, ex.SolutionDir)
	require.NoError(t, err)
	assert.Empty(t, res.unstable)
	assert.Equal(t, 7, res.Score)
}

// TestGradeAgainIfFailed: a mutant's tests run again only where they
// failed: the flaky submission's unstable tests are all ones that failed
// on the first run, and a test that passed is never run again.
func TestGradeAgainIfFailed(t *testing.T) {
	t.Parallel()
	g, ex, flaky := flakyToy(t)
	for range 3 {
		res, err := g.withRunsIfFailed(16).Grade(context.Background(), ex, flaky)
		require.NoError(t, err)
		for _, u := range res.unstable {
			assert.Regexp(t, `^TestSum(Empty)? failed on run 1 and passed on run \d+: `, u)
		}
		for _, tr := range res.Tests {
			if tr.Passed() || tr.Name != "TestSumEmpty" {
				// TestReverse grades the stub's Reverse (the flaky
				// submission holds only sum.go) and fails on every run;
				// TestSum calls Sum three times and passes rarely, so
				// it may fail on all sixteen: neither is unstable.
				continue
			}
			// TestSumEmpty calls Sum once, which is right half of the
			// time: sixteen runs agree with probability 2^-15.
			again := slices.ContainsFunc(res.unstable, func(u string) bool { return strings.HasPrefix(u, tr.Name+" ") })
			assert.True(t, again, "%s failed on run 1 and was not run again (unstable: %q)", tr.Name, res.unstable)
		}
	}
}

// TestOverlay: the reference's files over the exercise's.
func TestOverlay(t *testing.T) {
	c := fixtureCourse(t)
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	dir, err := overlay(t.TempDir(), ex.SolutionDir, toyFiles, ex.Dir)
	require.NoError(t, err)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"given.go", "reverse.go", "sum.go", "toy_test.go"}, names, "the reference's folders of variants are not copied")
	got, err := os.ReadFile(filepath.Join(dir, "sum.go"))
	require.NoError(t, err)
	assert.Equal(t, toySum, string(got))
}

// TestWriteVariant: the variants are the patches of extras/ and mutants/,
// each kind sorted by name, saying what they change; a variant's
// submission is the reference's student files with its patch applied.
func TestWriteVariant(t *testing.T) {
	c := fixtureCourse(t)
	writeFile(t, c.Root, "solutions/01-toy/mutants/sum-skips-last-too.patch", replaceDiff("Mutant: sorts after sum-skips-last\non two lines.\n\nA note.", "sum.go", toySum, "package toy\n"))
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	variants, err := ex.Variants()
	require.NoError(t, err)
	var got []string
	for _, v := range variants {
		got = append(got, v.Kind()+" "+v.Name+": "+v.Says)
	}
	assert.Equal(t, []string{
		"extras gc-and-helper: the collector runs before returning, and an unused helper.",
		"extras hidden-names: helpers named like the hidden tests' helper and like a package they import.",
		"mutant reverse-stops-early: the swaps stop one pair before the middle.",
		"mutant sum-refuses-empty: an empty slice is treated as an error instead of summing to zero.",
		"mutant sum-skips-last: the loop stops one element short (off by one).",
		"mutant sum-skips-last-too: sorts after sum-skips-last on two lines.",
	}, got)
	assert.Equal(t, filepath.Join(ex.SolutionDir, "mutants", "reverse-stops-early.patch"), variants[2].Patch)

	dir := filepath.Join(t.TempDir(), "reverse-stops-early")
	require.NoError(t, ex.WriteVariant(variants[2], dir))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"reverse.go", "sum.go"}, names)
	data, err := os.ReadFile(filepath.Join(dir, "reverse.go"))
	require.NoError(t, err)
	assert.Equal(t, strings.Replace(toyReverse, "i < j;", "i < j-1;", 1), string(data))
	data, err = os.ReadFile(filepath.Join(dir, "sum.go"))
	require.NoError(t, err)
	assert.Equal(t, toySum, string(data), "a file the patch leaves is the reference's")
}

// TestWriteVariantsCommand: solutions/write-variants.go (which go.mod's
// ignore keeps out of go build ./... and go vet ./...) builds and writes
// each mutant of a real exercise as a submission folder.
func TestWriteVariantsCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("go run builds the command")
	}
	t.Parallel()
	out := t.TempDir()
	cmd := exec.Command("go", "run", "../solutions/write-variants.go", "--exercise", "01-shared-storage", "--out", out)
	got, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", got)
	assert.Contains(t, string(got), "mutants of 01-shared-storage written to "+out)
	c, err := OpenCourse("..")
	require.NoError(t, err)
	ex, err := c.Exercise("01-shared-storage")
	require.NoError(t, err)
	variants, err := ex.Variants()
	require.NoError(t, err)
	for _, v := range variants {
		if v.Mutant {
			assert.FileExists(t, filepath.Join(out, v.Name, "share.go"))
		} else {
			assert.NoDirExists(t, filepath.Join(out, v.Name), "extras only with --kind extras")
		}
	}
}

// TestReleaseHasNoInstructorFiles: the student edition holds no solution,
// no mutant, no extras and no hidden test, and verify finds nothing to do
// in it.
func TestReleaseHasNoInstructorFiles(t *testing.T) {
	c := fixtureCourse(t)
	out := filepath.Join(t.TempDir(), "student")
	_, err := c.Release(out)
	require.NoError(t, err)
	require.NoError(t, filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(out, p)
		for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
			assert.NotContains(t, []string{"solutions", "mutants", "extras", "hidden"}, part, rel)
		}
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.NotContains(t, string(data), "Mutant: ", rel)
			assert.False(t, strings.HasSuffix(rel, ".patch"), rel)
			assert.NotContains(t, string(data), "secretMarkerOfTheHiddenTests", rel)
		}
		return nil
	}))
}

// TestCourseLayout: the course's own exercises pass verify's layout checks
// (student files only in solutions, extras and mutants that say what they
// change, no package-level variable in hidden tests or given files); the
// grading itself is make grader-verify's.
func TestCourseLayout(t *testing.T) {
	c, err := OpenCourse("..")
	require.NoError(t, err)
	names, err := c.Exercises()
	require.NoError(t, err)
	require.NotEmpty(t, names)
	for _, name := range names {
		ex, err := c.Exercise(name)
		require.NoError(t, err)
		variants, err := ex.Variants()
		require.NoError(t, err)
		assert.Empty(t, layoutProblems(c, ex, variants), name)
	}
}

func TestFeedbackSlip(t *testing.T) {
	cases := []struct{ text, want string }{
		{"reserved 40 MiB, want 41943040 (40% of the card)", ""},
		{"peak is 40%% of the baseline", "%%"},
		{"got %!d(string=five)", "%!"},
		{"got &tensor.Tensor{st:0xc000012345, gradMu:sync.Mutex{state:0}}", "&tensor.Tensor{st:"},
		{"the lock sync.Mutex{state:0, sema:0}", "sync.Mutex{state:"},
		{"a lock sync.Mutex{}", "sync.Mutex{"},
		{"got plan.Plan{Stages:[1 2]}", ""},
		{"panic: not implemented\nleak.TestEdgeCases(0x7198736e248)\n\t[hidden test] +0x29a", ""},
		{"shape [2 3] float32 [1 2 3 ...]", ""},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, feedbackSlip(c.text), c.text)
	}
}
