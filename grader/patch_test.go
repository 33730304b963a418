package grader

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replaceDiff is a unified diff that replaces all of the file name, old,
// by new, in one hunk without context, after the description says.
func replaceDiff(says, name, old, new string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n--- a/%s\n+++ b/%s\n", says, name, name)
	oldLines, newLines := splitLines(old), splitLines(new)
	fmt.Fprintf(&b, "@@ -1,%d +1,%d @@\n", len(oldLines), len(newLines))
	for _, side := range []struct {
		op    string
		lines []string
	}{{"-", oldLines}, {"+", newLines}} {
		for _, l := range side.lines {
			b.WriteString(side.op + l)
			if !strings.HasSuffix(l, "\n") {
				b.WriteString("\n\\ No newline at end of file\n")
			}
		}
	}
	return b.String()
}

// toyReverse is the fixture's reference reverse.go.
const toyReverse = "package toy\n\n// Reverse reverses xs in place.\nfunc Reverse(xs []int) error {\n\tfor i, j := 0, len(xs)-1; i < j; i, j = i+1, j-1 {\n\t\txs[i], xs[j] = xs[j], xs[i]\n\t}\n\treturn nil\n}\n"

// skipsLast is the fixture's mutant sum-skips-last, as git diff writes it.
const skipsLast = `Mutant: the loop stops one element short (off by one).

diff --git a/sum.go b/sum.go
index 3d5c0c1..7e3d2a9 100644
--- a/sum.go
+++ b/sum.go
@@ -3,8 +3,8 @@
 // Sum returns the sum of xs.
 func Sum(xs []int) (int, error) {
 	total := 0
-	for _, x := range xs {
-		total += x
+	for i := 0; i < len(xs)-1; i++ {
+		total += xs[i]
 	}
 	return total, nil
 }
`

var toyFiles = []string{"sum.go", "reverse.go"}

func TestApplyPatch(t *testing.T) {
	t.Parallel()
	skipped := strings.Replace(toySum, "\tfor _, x := range xs {\n\t\ttotal += x\n", "\tfor i := 0; i < len(xs)-1; i++ {\n\t\ttotal += xs[i]\n", 1)
	reversed := strings.Replace(toyReverse, "i < j;", "i < j-1;", 1)
	both := toyFiles
	for _, tc := range []struct {
		name  string
		files map[string]string // the reference's; sum.go and reverse.go when nil
		patch string
		want  map[string]string // the files afterwards, when the patch applies
		says  string
		err   string // what the error says, when it does not
	}{
		{name: "git diff", patch: skipsLast,
			want: map[string]string{"sum.go": skipped, "reverse.go": toyReverse},
			says: "Mutant: the loop stops one element short (off by one)."},
		{name: "diff -u with time stamps and plain names", patch: "Mutant: a description\non two lines.\n\nAnd a note.\n" +
			"--- sum.go\t2026-01-01 10:00:00.000000000 +0000\n+++ sum.go\t2026-01-02 10:00:00.000000000 +0000\n" +
			"@@ -5,5 +5,5 @@ func Sum(xs []int) (int, error) {\n \ttotal := 0\n-\tfor _, x := range xs {\n-\t\ttotal += x\n+\tfor i := 0; i < len(xs)-1; i++ {\n+\t\ttotal += xs[i]\n \t}\n \treturn total, nil\n",
			want: map[string]string{"sum.go": skipped, "reverse.go": toyReverse},
			says: "Mutant: a description on two lines."},
		{name: "two files, two hunks", patch: "Extra: x\n" +
			"--- a/sum.go\n+++ b/sum.go\n@@ -1,2 +1,3 @@\n package toy\n+// One more line.\n \n@@ -9,2 +10,3 @@\n \treturn total, nil\n }\n+// The end.\n" +
			"--- a/reverse.go\n+++ b/reverse.go\n@@ -5 +5 @@\n-\tfor i, j := 0, len(xs)-1; i < j; i, j = i+1, j-1 {\n+\tfor i, j := 0, len(xs)-1; i < j-1; i, j = i+1, j-1 {\n",
			want: map[string]string{"sum.go": strings.Replace(toySum, "package toy\n", "package toy\n// One more line.\n", 1) + "// The end.\n", "reverse.go": reversed},
			says: "Extra: x"},
		{name: "an empty context line stripped by an editor", patch: "--- a/reverse.go\n+++ b/reverse.go\n@@ -1,5 +1,5 @@\n package toy\n\n // Reverse reverses xs in place.\n func Reverse(xs []int) error {\n-\tfor i, j := 0, len(xs)-1; i < j; i, j = i+1, j-1 {\n+\tfor i, j := 0, len(xs)-1; i < j-1; i, j = i+1, j-1 {\n",
			want: map[string]string{"sum.go": toySum, "reverse.go": reversed}},
		{name: "the newline at the end removed", files: map[string]string{"sum.go": "a\nb\n"},
			patch: "--- a/sum.go\n+++ b/sum.go\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n",
			want:  map[string]string{"sum.go": "a\nb"}},
		{name: "the newline at the end added", files: map[string]string{"sum.go": "a\nb"},
			patch: "--- a/sum.go\n+++ b/sum.go\n@@ -1,2 +1,3 @@\n a\n-b\n\\ Kein Zeilenumbruch am Dateiende.\n+b\n+c\n",
			want:  map[string]string{"sum.go": "a\nb\nc\n"}},
		{name: "a student file created", files: map[string]string{"sum.go": toySum},
			patch: "diff --git a/reverse.go b/reverse.go\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/reverse.go\n@@ -0,0 +1,2 @@\n+package toy\n+// Empty.\n",
			want:  map[string]string{"sum.go": toySum, "reverse.go": "package toy\n// Empty.\n"}},
		{name: "a student file deleted", files: map[string]string{"sum.go": toySum, "reverse.go": "package toy\n"},
			patch: "--- a/reverse.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-package toy\n",
			want:  map[string]string{"sum.go": toySum}},
		{name: "lines inserted into an empty file", files: map[string]string{"sum.go": ""},
			patch: "--- a/sum.go\n+++ b/sum.go\n@@ -0,0 +1 @@\n+package toy\n",
			want:  map[string]string{"sum.go": "package toy\n"}},

		{name: "a changed reference", patch: strings.Replace(skipsLast, " \ttotal := 0\n", " \ttotal := 1\n", 1),
			err: "grader: x.patch: hunk 1 of sum.go (line 7, @@ -3,8 +3,8 @@) does not apply: line 5 of sum.go is \"\\ttotal := 0\", the patch expects \"\\ttotal := 1\" (the reference changed since the patch was made?)"},
		{name: "no offset", patch: strings.Replace(skipsLast, "@@ -3,8 +3,8 @@", "@@ -2,8 +2,8 @@", 1),
			err: "grader: x.patch: hunk 1 of sum.go (line 7, @@ -2,8 +2,8 @@) does not apply: line 2 of sum.go is \"\", the patch expects \"// Sum returns the sum of xs.\""},
		{name: "no newline where the patch expects one", files: map[string]string{"sum.go": "a\nb"},
			patch: "--- a/sum.go\n+++ b/sum.go\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n",
			err:   `line 2 of sum.go is "b", the patch expects "b\n"`},
		{name: "a header out of step", patch: strings.Replace(skipsLast, "@@ -3,8 +3,8 @@", "@@ -3,8 +4,8 @@", 1),
			err: "grader: x.patch: hunk 1 of sum.go (line 7, @@ -3,8 +4,8 @@): its new lines would start at line 3, not 4"},
		{name: "past the end", patch: "--- a/sum.go\n+++ b/sum.go\n@@ -10,2 +10,2 @@\n }\n-x\n+y\n",
			err: "hunk 1 of sum.go (line 3, @@ -10,2 +10,2 @@) does not apply: it reaches line 11, and sum.go has 10 lines"},
		{name: "hunks out of order", patch: "--- a/sum.go\n+++ b/sum.go\n@@ -2 +2 @@\n-\n+//\n@@ -1 +1 @@\n-package toy\n+package toy2\n",
			err: "hunk 2 of sum.go (line 6, @@ -1 +1 @@) starts before the end of the hunk before it"},
		{name: "a given file", patch: "--- a/given.go\n+++ b/given.go\n@@ -1 +1 @@\n-package toy\n+package toy\n",
			err: "grader: x.patch changes given.go, which is not one of the student files [sum.go reverse.go]"},
		{name: "a path into another folder", patch: "--- a/../exercises/01-toy/sum.go\n+++ b/../exercises/01-toy/sum.go\n@@ -1 +1 @@\n-package toy\n+package toy\n",
			err: "changes ../exercises/01-toy/sum.go, which is not one of the student files"},
		{name: "a new helper file", patch: "--- /dev/null\n+++ b/helper.go\n@@ -0,0 +1 @@\n+package toy\n",
			err: "grader: x.patch changes helper.go, which is not one of the student files"},
		{name: "a given file deleted", files: map[string]string{"sum.go": toySum, "given.go": "package toy\n"},
			patch: "--- a/given.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-package toy\n",
			err:   "grader: x.patch changes given.go, which is not one of the student files"},
		{name: "a student file created twice", patch: "--- /dev/null\n+++ b/sum.go\n@@ -0,0 +1 @@\n+package toy\n",
			err: "grader: x.patch creates sum.go, which exists"},
		{name: "a missing file changed", files: map[string]string{"sum.go": toySum}, patch: "--- a/reverse.go\n+++ b/reverse.go\n@@ -1 +1 @@\n-package toy\n+package toy\n",
			err: "grader: x.patch changes reverse.go, which does not exist"},
		{name: "a deletion that leaves lines", patch: "--- a/reverse.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-package toy\n",
			err: "grader: x.patch deletes reverse.go but leaves 8 of its lines"},
		{name: "a rename", patch: "--- a/sum.go\n+++ b/reverse.go\n@@ -1 +1 @@\n-package toy\n+package toy\n",
			err: "grader: x.patch:1: sum.go becomes reverse.go: renames are not supported"},
		{name: "a mode change", patch: "diff --git a/sum.go b/sum.go\nold mode 100644\nnew mode 100755\n",
			err: "grader: x.patch:2: \"old mode 100644\": only changes to the lines of a file are supported"},
		{name: "a binary file", patch: "diff --git a/sum.go b/sum.go\nindex 1..2 100644\nBinary files a/sum.go and b/sum.go differ\n",
			err: "grader: x.patch:3: \"Binary files a/sum.go and b/sum.go differ\": only changes"},
		{name: "a diff line without a file header", patch: "diff --git a/sum.go b/sum.go\n",
			err: "grader: x.patch:2: expected a file header"},
		{name: "a short hunk", patch: strings.TrimSuffix(skipsLast, " }\n"),
			err: "grader: x.patch:16: @@ -3,8 +3,8 @@: the patch ends after 7 of its 8 old and 7 of its 8 new lines"},
		{name: "a long hunk", patch: skipsLast + " \n",
			err: "grader: x.patch:18: \" \": expected a hunk (@@ ...) or the next file (diff or ---)"},
		{name: "a line that is not a hunk's", patch: strings.Replace(skipsLast, " \t}\n", "*\t}\n", 1),
			err: "grader: x.patch:15: @@ -3,8 +3,8 @@: \"*\\t}\" is not a context, removed or added line"},
		{name: "more removed lines than counted", patch: "--- a/sum.go\n+++ b/sum.go\n@@ -1 +1 @@\n-package toy\n-\n+package toy\n",
			err: "grader: x.patch:5: @@ -1 +1 @@: more lines than the header counts (1 old, 1 new)"},
		{name: "a hunk header without numbers", patch: "--- a/sum.go\n+++ b/sum.go\n@@ -a +b @@\n",
			err: "grader: x.patch:3: \"@@ -a +b @@\" is not a hunk header"},
		{name: "a huge number", patch: "--- a/sum.go\n+++ b/sum.go\n@@ -99999999999999999999 +1 @@\n",
			err: "grader: x.patch:3: @@ -99999999999999999999 +1 @@: 99999999999999999999 is too large"},
		{name: "a hunk without lines", patch: "--- a/sum.go\n+++ b/sum.go\n@@ -1,0 +1,0 @@\n",
			err: "a hunk without lines"},
		{name: "line zero", patch: "--- a/sum.go\n+++ b/sum.go\n@@ -0 +1 @@\n-x\n+y\n",
			err: "@@ -0 +1 @@: lines are counted from 1"},
		{name: "a file without hunks", patch: "--- a/sum.go\n+++ b/sum.go\n",
			err: "grader: x.patch:3: sum.go has no hunks"},
		{name: "a file twice", patch: skipsLast + "--- a/sum.go\n+++ b/sum.go\n@@ -1 +1 @@\n-package toy\n+package toy\n",
			err: "grader: x.patch:18: sum.go again"},
		{name: "both sides missing", patch: "--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+x\n",
			err: "both sides of the file header are /dev/null"},
		{name: "a description only", patch: "Mutant: forgot the diff.\n",
			err: "grader: x.patch changes no file"},
		{name: "a misplaced no-newline mark", patch: "--- a/sum.go\n+++ b/sum.go\n@@ -1,2 +1,2 @@\n-package toy\n+package toy\n\\ No newline at end of file\n \n",
			err: "grader: x.patch: line 1 of the new sum.go has no newline but lines follow it"},
		{name: "an empty line without a newline", files: map[string]string{"sum.go": "a\nb\n"},
			patch: "--- sum.go\n+++ sum.go\n@@ -1,2 +1,2 @@\n a\n-b\n+\n\\",
			err:   "grader: x.patch:7: @@ -1,2 +1,2 @@: an empty line without its newline is no line"},
		{name: "a no-newline mark first", patch: "--- a/sum.go\n+++ b/sum.go\n@@ -1 +1 @@\n\\ No newline at end of file\n",
			err: "is not a context, removed or added line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string][]byte{"sum.go": []byte(toySum), "reverse.go": []byte(toyReverse)}
			if tc.files != nil {
				files = map[string][]byte{}
				for name, data := range tc.files {
					files[name] = []byte(data)
				}
			}
			before := maps.Clone(files)
			p, err := parsePatch("x.patch", []byte(tc.patch))
			var got map[string][]byte
			if err == nil {
				got, err = p.apply(files, both)
			}
			assert.Equal(t, before, files, "the reference's files are left as they were")
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.True(t, strings.HasPrefix(err.Error(), "grader: x.patch"), err.Error())
				return
			}
			require.NoError(t, err)
			want := map[string][]byte{}
			for name, data := range tc.want {
				want[name] = []byte(data)
			}
			assert.Equal(t, want, got)
			assert.Equal(t, tc.says, p.says)
		})
	}
}

// TestReplaceDiff: the tests' whole-file diffs apply, with or without a
// newline at the end.
func TestReplaceDiff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ old, new string }{{toySum, "package toy\n"}, {"a", "b"}, {"a\n", "b"}, {"a", "b\n"}} {
		p, err := parsePatch("x.patch", []byte(replaceDiff("Mutant: x", "sum.go", tc.old, tc.new)))
		require.NoError(t, err)
		got, err := p.apply(map[string][]byte{"sum.go": []byte(tc.old)}, toyFiles)
		require.NoError(t, err)
		assert.Equal(t, tc.new, string(got["sum.go"]))
	}
}

// reversedPatch is the patch that undoes p.
func reversedPatch(p *patch) *patch {
	r := &patch{name: p.name, says: p.says}
	for _, fp := range p.files {
		rf := filePatch{name: fp.name, create: fp.delete, delete: fp.create}
		for _, h := range fp.hunks {
			rh := hunk{line: h.line, header: h.header, oldStart: h.newStart, oldCount: h.newCount, newStart: h.oldStart, newCount: h.oldCount}
			for _, l := range h.lines {
				switch l.op {
				case '-':
					l.op = '+'
				case '+':
					l.op = '-'
				}
				rh.lines = append(rh.lines, l)
			}
			rf.hunks = append(rf.hunks, rh)
		}
		r.files = append(r.files, rf)
	}
	return r
}

// FuzzApplyPatch: parsing and applying never panic, every error is the
// grader's and names the patch, and a patch that applies can be undone:
// its reverse applies to the result and gives back the files.
func FuzzApplyPatch(f *testing.F) {
	dir := filepath.Join("testdata", "course", "solutions", "01-toy")
	for _, kind := range []string{mutantsDir, extrasDir} {
		names, err := filepath.Glob(filepath.Join(dir, kind, "*.patch"))
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range names {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data, []byte(toySum))
		}
	}
	f.Add([]byte(skipsLast), []byte(toySum))
	f.Add([]byte("--- a/sum.go\n+++ b/sum.go\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"), []byte("a\nb\n"))
	f.Add([]byte("--- a/sum.go\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n\\ No newline at end of file\n"), []byte("a\nb"))
	f.Add([]byte("--- /dev/null\n+++ b/reverse.go\n@@ -0,0 +1 @@\n+x\n"), []byte("a\n"))
	f.Add([]byte(replaceDiff("Extra: x", "sum.go", "a\n\nb", "c\n")), []byte("a\n\nb"))
	f.Fuzz(func(t *testing.T, data, file []byte) {
		files := map[string][]byte{"sum.go": file}
		p, err := parsePatch("f.patch", data)
		var got map[string][]byte
		if err == nil {
			got, err = p.apply(files, toyFiles)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "grader: f.patch") {
				t.Fatalf("an error that does not name the patch: %v", err)
			}
			return
		}
		back, err := reversedPatch(p).apply(got, toyFiles)
		if err != nil {
			t.Fatalf("the reverse of a patch that applies does not apply: %v", err)
		}
		if !maps.EqualFunc(back, files, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Fatalf("the reverse gives %q, not %q", back, files)
		}
	})
}
