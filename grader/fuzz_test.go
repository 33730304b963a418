package grader

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseSpec checks that ParseSpec never panics and that a spec it
// accepts is sound: valid names, distinct tests, positive points, and a
// round trip through JSON that parses to the same spec.
func FuzzParseSpec(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "course", "grader", "hidden", "01-toy", "grade.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"exercise":"01-a","package":"a","student_files":["a.go"],"tests":[{"name":"TestA","points":1}]}`))
	f.Add([]byte(`{"exercise":"01-a","package":"a","student_files":["../a.go"],"tests":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := ParseSpec(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "grade.json: ") {
				t.Fatalf("error without the grade.json prefix: %v", err)
			}
			return
		}
		if spec.MaxScore() <= 0 || spec.Timeout() <= 0 || spec.Memory() <= 0 {
			t.Fatalf("accepted a spec without points or limits: %+v", spec)
		}
		seen := map[string]bool{}
		for _, test := range spec.Tests {
			if seen[test.Name] || !isTestName(test.Name) || test.Points <= 0 {
				t.Fatalf("accepted test %+v", test)
			}
			seen[test.Name] = true
		}
		for _, f := range spec.StudentFiles {
			if filepath.Base(f) != f || strings.HasSuffix(f, "_test.go") {
				t.Fatalf("accepted student file %q", f)
			}
		}
		again, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseSpec(again); err != nil {
			t.Fatalf("an accepted spec does not parse again: %v", err)
		}
	})
}

// FuzzTestLog checks that any output of a test binary parses, the same
// whether it comes at once or in two pieces, and that a test reported
// passing always has a pass line carrying the frame mark.
func FuzzTestLog(f *testing.F) {
	f.Add([]byte("\x16=== RUN   TestA\nx\n\x16--- PASS: TestA (0.00s)\n\x16PASS\n"), 5)
	f.Add([]byte("--- PASS: TestA (0.00s)\n\x16--- FAIL: TestA\n"), 0)
	f.Add([]byte("\x16--- PASS"), 3)           // no colon: not a verdict
	f.Add([]byte("\x16--- PASS: \n"), 1)       // no name
	f.Add([]byte("\x16--- MAYBE: TestA\n"), 9) // no such verdict
	f.Fuzz(func(t *testing.T, out []byte, cut int) {
		for _, name := range []string{"TestA", ""} {
			whole, split := newTestLog(name), newTestLog(name)
			whole.Write(out)
			whole.Close()
			cut := max(0, min(cut, len(out)))
			split.Write(out[:cut])
			split.Write(out[cut:])
			split.Close()
			if whole.passed != split.passed || whole.ran != split.ran || whole.text.String() != split.text.String() || whole.outside.String() != split.outside.String() {
				t.Fatalf("%q read at once and cut at %d differ", out, cut)
			}
			if whole.passed && !strings.Contains(string(out), frameMark+"--- PASS: "+name) {
				t.Fatalf("%q passed without a marked pass line in %q", name, out)
			}
		}
	})
}

// FuzzCheckStudentFile checks that the static check of a submitted file
// never panics, and that a file it accepts imports only what the policy
// allows and holds no //go: directive.
func FuzzCheckStudentFile(f *testing.F) {
	f.Add([]byte("package toy\n\nimport \"fmt\"\n\nfunc Sum(xs []int) (int, error) { return len(fmt.Sprint(xs)), nil }\n"))
	f.Add([]byte("package toy\n\nimport \"os\"\n\nfunc init() { os.Args = nil }\n"))
	f.Add([]byte("//go:build ignore\n\npackage toy\n"))
	f.Add([]byte("package toy\nfunc f() { /*line x.go:1*/ }\n"))
	allow := policyFor(nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		if checkStudentFile("sum.go", data, "toy", allow) != "" {
			return
		}
		if strings.Contains(string(data), "//go:") && !strings.Contains(string(data), "\"") && !strings.Contains(string(data), "`") {
			t.Fatalf("accepted a //go: directive:\n%s", data)
		}
		file, err := parser.ParseFile(token.NewFileSet(), "sum.go", data, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("accepted a file that does not parse: %v", err)
		}
		for _, imp := range file.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); !allow.importAllowed(path) {
				t.Fatalf("accepted import %q", path)
			}
		}
	})
}
