package grader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gpumem/course/grader/sandbox"
)

// Grader grades submissions of one course.
type Grader struct {
	Course  *Course
	Sandbox *sandbox.Sandbox
	Go      string      // the go command; "go" when empty
	Build   BuildLimits // the zero value: DefaultBuildLimits
	runs    int         // verify runs each test this many times (runAgain); 0: once
	// againIfFailed: runAgain reruns only a test that failed (verify's
	// mutants: that the mutant's failure is no accident is what counts).
	againIfFailed bool
	hidden        *onceCache[*hiddenTests]      // the hidden tests as compiled; nil: rewritten for every submission
	exports       *onceCache[map[string]string] // export data by import list (builder.exportData); nil: go list for every type check
}

// New returns a grader for course with a sandbox of the given mode; the
// sandbox's notices go to notices.
func New(course *Course, mode sandbox.Mode, notices io.Writer) (*Grader, error) {
	hide := []string{course.Root}
	for _, dir := range []string{os.Getenv("GOCACHE"), os.Getenv("GOMODCACHE")} {
		if dir != "" {
			hide = append(hide, dir)
		}
	}
	if cache, err := os.UserCacheDir(); err == nil {
		hide = append(hide, cache)
	}
	sb, err := sandbox.New(mode, notices, hide...)
	if err != nil {
		return nil, err
	}
	return &Grader{Course: course, Sandbox: sb, hidden: &onceCache[*hiddenTests]{}, exports: &onceCache[map[string]string]{}}, nil
}

func (g *Grader) builder() *builder {
	goCmd := g.Go
	if goCmd == "" {
		goCmd = "go"
	}
	limits := g.Build
	if limits == (BuildLimits{}) {
		limits = DefaultBuildLimits
	}
	return &builder{course: g.Course, goCmd: goCmd, limits: limits, exports: g.exports}
}

// limitsFor is what one test process of spec may use.
func limitsFor(spec *Spec) sandbox.Limits {
	wall := time.Duration(spec.Timeout()) * time.Second
	return sandbox.Limits{
		Test:         wall,
		Wall:         wall + 3*time.Second,
		CPU:          2*wall + 5*time.Second,
		AddressSpace: int64(spec.Memory()) << 20,
		Procs:        256,
		FileSize:     64 << 20,
		Output:       4 << 20,
	}
}

// Result is the grade of one submission.
type Result struct {
	Exercise      string        `json:"exercise"`
	Score         int           `json:"score"`
	MaxScore      int           `json:"max_score"`
	Status        string        `json:"status"` // graded, compile_error
	Output        string        `json:"output,omitempty"`
	Tests         []TestResult  `json:"tests"`
	ExecutionTime time.Duration `json:"-"`
	Seconds       float64       `json:"execution_time"`
	unstable      []string      // tests whose outcome changed when run again (verify)
}

// TestResult is the result of one test.
type TestResult struct {
	Name        string  `json:"name"`
	Score       int     `json:"score"`
	MaxScore    int     `json:"max_score"`
	Status      Status  `json:"status"`
	Output      string  `json:"output,omitempty"`
	Visibility  string  `json:"visibility,omitempty"`
	Description string  `json:"description,omitempty"`
	Seconds     float64 `json:"seconds"`
}

// Passed reports whether the test passed.
func (t TestResult) Passed() bool { return t.Status == StatusPassed }

// maxFeedback bounds the feedback of one test.
const maxFeedback = 8 << 10

// Grade grades the submission in dir (the student's files, at its top or
// anywhere below it) against the exercise's hidden tests. An error means
// the grader itself failed; a submission that does not compile or crashes
// is graded (zero for what it affects) with a nil error.
func (g *Grader) Grade(ctx context.Context, ex *Exercise, dir string) (*Result, error) {
	if ex.Spec == nil {
		return nil, fmt.Errorf("grader: exercise %s has no hidden tests (%s/grade.json); this is a student edition of the course", ex.Name, ex.HiddenDir)
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("grader: the submission %s is not a folder", dir)
	}
	g.Sandbox.WarnReadable()
	start := time.Now()
	spec := ex.Spec
	allow := policyFor(spec)
	var notes []string

	// The student's files, or the stub for each that is missing or cannot
	// be part of the package: zero for what that file implements.
	studentData := map[string][]byte{}
	for _, f := range spec.StudentFiles {
		data, problem := findSubmitted(dir, f)
		if problem == "" {
			problem = checkStudentFile(f, data, spec.Package, allow)
		}
		if problem != "" {
			notes = append(notes, problem+"; graded as the untouched stub (no points for what it implements)")
			data = nil
		}
		studentData[f] = data
	}
	given, err := exerciseFiles(ex.Dir)
	if err != nil {
		return nil, err
	}
	if others := otherSources(dir, append(given, spec.StudentFiles...)); len(others) > 0 {
		notes = append(notes, fmt.Sprintf("The grader compiles only %s; these files of the submission were not compiled: %s (move what you wrote there into %[1]s)",
			strings.Join(spec.StudentFiles, ", "), strings.Join(others, ", ")))
	}
	hiddenFuncs, err := testFuncs(ex.HiddenDir, spec.Package)
	if err != nil {
		return nil, err
	}
	tests := make([]string, len(spec.Tests))
	for i, t := range spec.Tests {
		tests[i] = t.Name
		if !contains(hiddenFuncs, t.Name) {
			return nil, fmt.Errorf("grader: %s/grade.json grades %s, which no hidden test file declares", ex.HiddenDir, t.Name)
		}
	}
	hidden, err := g.hiddenTests(ctx, ex)
	if err != nil {
		return nil, err
	}
	red := newRedactor(spec.Package, hidden)

	res := &Result{Exercise: ex.Name, MaxScore: spec.MaxScore(), Status: "graded"}
	limits := limitsFor(spec)
	limits.Serial = true
	var built *buildResult
	for attempt := 0; ; attempt++ {
		files, err := g.packageFiles(ex, studentData, hidden.files)
		if err != nil {
			return nil, err
		}
		if allNil(studentData) {
			// Every student file is the stub, which scores zero by
			// construction (verify checks it): nothing to build.
			built = nil
			break
		}
		built, err = g.builder().build(ctx, spec.Package, files, tests, spec.StudentFiles, limits)
		if err != nil {
			return nil, err
		}
		if built.bin != nil {
			// It compiled; before any of it runs, refuse every use of
			// what the exercise does not allow (Note [Allow, do not
			// deny]), however the code reached it.
			problems, err := g.builder().policyUses(ctx, allow, spec.Package, nonTest(files), spec.StudentFiles)
			if err != nil {
				os.RemoveAll(built.workDir)
				return nil, err
			}
			if len(problems) == 0 {
				break
			}
			os.RemoveAll(built.workDir)
			for _, f := range sortedKeys(problems) {
				notes = append(notes, problems[f]+"; graded as the untouched stub (no points for what it implements)")
				studentData[f] = nil
			}
			built = nil
			if allNil(studentData) {
				break
			}
			continue
		}
		os.RemoveAll(built.workDir)
		if len(built.badFiles) == 0 {
			// The build failed without naming a student file (an import
			// cycle, a package that cannot be loaded, the build's limits):
			// the stub, which verify builds, says whether that is the
			// code's fault or the grader's.
			if err := g.buildsWithStubs(ctx, ex, hidden.files, tests, limits); err != nil {
				return nil, err
			}
		}
		msg := red.compilerMessages(built.errors, spec.StudentFiles)
		retry := false
		for f := range built.badFiles {
			if studentData[f] != nil {
				studentData[f] = nil
				retry = true
			}
		}
		if retry && attempt == 0 && len(spec.StudentFiles) > 1 && !allNil(studentData) {
			notes = append(notes, "Your code does not compile:\n"+indent(msg)+"\nThe files with errors are graded as the untouched stub.")
			continue
		}
		notes = append(notes, "Your code does not compile, so no test could run:\n"+indent(msg))
		res.Status = "compile_error"
		built = nil
		break
	}
	if built != nil {
		defer os.RemoveAll(built.workDir)
	}
	notRun := "not implemented: the submission's files are missing or unusable (see the submission's output)"
	if res.Status == "compile_error" {
		notRun = "not run: the code does not compile (see the submission's output)"
	}
	var bin *binary
	if built != nil {
		bin = built.bin
	}
	if err := g.score(ctx, bin, spec.Tests, limits, red, notRun, res); err != nil {
		return nil, err
	}
	res.Output = stripControl(strings.Join(notes, "\n\n"))
	res.ExecutionTime = time.Since(start)
	res.Seconds = roundSeconds(res.ExecutionTime)
	return res, nil
}

// score runs each test of tests in bin (each in its own process; verify
// runs it again) and adds its result and points to res. With no binary
// (the code does not compile, or every student file is the stub), each
// test is not run, with notRun as its feedback.
func (g *Grader) score(ctx context.Context, bin *binary, tests []TestSpec, limits sandbox.Limits, red *redactor, notRun string, res *Result) error {
	for _, t := range tests {
		tr := TestResult{Name: t.Name, MaxScore: t.Points, Visibility: t.Visibility, Description: t.Description}
		if bin == nil {
			tr.Status, tr.Output = StatusNotRun, notRun
		} else {
			if err := g.runTest(ctx, bin, t.Name, limits, red, &tr); err != nil {
				return err
			}
			if err := g.runAgain(ctx, bin, limits, red, tr, res); err != nil {
				return err
			}
		}
		if tr.Passed() {
			tr.Score = t.Points
		}
		res.Score += tr.Score
		res.Tests = append(res.Tests, tr)
	}
	return nil
}

// buildsWithStubs returns an error when the exercise does not build with
// every student file the stub: the grader's failure (a module missing from
// the cache, say), not a submission's.
func (g *Grader) buildsWithStubs(ctx context.Context, ex *Exercise, tests []source, names []string, limits sandbox.Limits) error {
	files, err := g.packageFiles(ex, nil, tests)
	if err != nil {
		return err
	}
	built, err := g.builder().build(ctx, ex.Spec.Package, files, names, ex.Spec.StudentFiles, limits)
	if err != nil {
		return err
	}
	os.RemoveAll(built.workDir)
	if built.bin != nil {
		return nil
	}
	if moduleTrouble.MatchString(built.errors) {
		return fmt.Errorf("grader: the test build cannot resolve a module (download the course's modules with go mod download, or set GOPROXY to a file:// cache):\n%s", built.errors)
	}
	return fmt.Errorf("grader: exercise %s does not build with its stubs:\n%s", ex.Name, built.errors)
}

// packageFiles is the package to compile: the exercise's given files, the
// student's files (the stub where nil) and the tests.
func (g *Grader) packageFiles(ex *Exercise, student map[string][]byte, tests []source) ([]source, error) {
	given, err := goFiles(ex.Dir, false)
	if err != nil {
		return nil, err
	}
	var files []source
	for _, f := range given {
		data := student[f]
		if data == nil {
			if data, err = os.ReadFile(filepath.Join(ex.Dir, f)); err != nil {
				return nil, fmt.Errorf("grader: %w", err)
			}
		}
		files = append(files, source{f, data})
	}
	for f, data := range student {
		if data != nil && !contains(given, f) {
			files = append(files, source{f, data})
		}
	}
	return append(files, tests...), nil
}

// exerciseFiles lists the Go files of the exercise's folder: the stubs,
// the given files and the public tests.
func exerciseFiles(dir string) ([]string, error) {
	var names []string
	for _, tests := range []bool{false, true} {
		list, err := goFiles(dir, tests)
		if err != nil {
			return nil, err
		}
		names = append(names, list...)
	}
	return names, nil
}

// studentPaths puts the student's path (exercises/02-fragmentation/) in
// place of the grader's package folder (fragment/) in compiler messages, so
// that a message names the file the student edits.
func studentPaths(msg, pkg, dir string) string {
	re := regexp.MustCompile(`(^|[\s(])` + regexp.QuoteMeta(pkg+"/") + `([A-Za-z0-9_.-]+\.go:)`)
	return re.ReplaceAllString(msg, "${1}"+strings.ReplaceAll(filepath.ToSlash(dir), "$", "$$")+"/${2}")
}

// relToCourse is dir relative to the course's root when it lies inside
// it, else dir itself.
func (g *Grader) relToCourse(dir string) string {
	if rel, err := filepath.Rel(g.Course.Root, dir); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return dir
}

// otherSources lists the source files of the submission in dir (Go, assembly,
// C, object files) that are neither student files nor files of the
// exercise (known): the grader never reads them (only the files the spec
// names reach the build), and says so, since a student who put a helper
// there would otherwise not know why it is undefined. At most 20 are
// named.
func otherSources(dir string, known []string) []string {
	var others []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || len(others) >= 20 {
			return nil
		}
		if d.IsDir() && p != dir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "__MACOSX") {
			return filepath.SkipDir
		}
		switch filepath.Ext(d.Name()) {
		case ".go", ".s", ".S", ".c", ".h", ".cc", ".cpp", ".syso":
			if d.Type().IsRegular() && !contains(known, d.Name()) {
				rel, _ := filepath.Rel(dir, p)
				others = append(others, rel)
			}
		}
		return nil
	})
	return others
}

// findSubmitted reads the file called name from the submission: at its top,
// or the only file of that name below it.
func findSubmitted(dir, name string) ([]byte, string) {
	path := filepath.Join(dir, name)
	if info, err := os.Lstat(path); err != nil || !info.Mode().IsRegular() {
		var found []string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && p != dir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "__MACOSX") {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() && d.Name() == name {
				found = append(found, p)
			}
			return nil
		})
		switch len(found) {
		case 0:
			return nil, name + " is missing from the submission"
		case 1:
			path = found[0]
		default:
			return nil, fmt.Sprintf("the submission holds %d files called %s; keep one", len(found), name)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Sprintf("%s cannot be read: %v", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSourceBytes+1))
	if err != nil {
		return nil, fmt.Sprintf("%s cannot be read: %v", name, err)
	}
	return data, ""
}

// runTest runs one test of bin in its own process and fills tr.
func (g *Grader) runTest(ctx context.Context, bin *binary, name string, limits sandbox.Limits, red *redactor, tr *TestResult) error {
	log := newTestLog(name)
	secret, err := randomSecret()
	if err != nil {
		return err
	}
	out, err := g.Sandbox.Run(ctx, sandbox.Run{
		Binary: bin.path,
		Args:   testArgs(name, bin.timeout),
		Limits: limits,
		Output: log,
		Secret: secret,
	})
	if err != nil {
		return err
	}
	log.Close()
	tr.Seconds = roundSeconds(out.Elapsed)
	status, why := verdict(out, log, name, secret, limits)
	tr.Status = status
	text, outside := log.text.String(), log.outside.String()
	var b strings.Builder
	if why != "" {
		b.WriteString(why + "\n")
	}
	// A test stopped for time: where the student's code stood, first, in
	// place of the goroutine dump of the testing package and the grader
	// (kept only when no frame is in the exercise's files).
	var frames []string
	if tr.Status == StatusTimeout {
		frames = stuckAt(red.clean(text+"\n"+outside), bin.pkg)
	}
	if len(frames) > 0 {
		b.WriteString("Where your code was when it was stopped:\n")
		for _, f := range frames {
			b.WriteString("    " + f + "\n")
		}
		if t := strings.TrimRight(beforeDump(text), "\n"); t != "" {
			b.WriteString(t + "\n")
		}
	} else if t := strings.TrimRight(text, "\n"); t != "" {
		b.WriteString(t + "\n")
	}
	if tr.Status != StatusPassed && len(frames) == 0 {
		if t := strings.TrimSpace(outside); t != "" {
			b.WriteString(t + "\n")
		}
	}
	tr.Output = truncate(stripControl(red.clean(b.String())), maxFeedback)
	return nil
}

// stackFrame is a goroutine dump's location line: a tab, a file and a line.
var stackFrame = regexp.MustCompile(`^\t(\S+\.go):(\d+)(?: \+0x[0-9a-f]+)?$`)

// stuckAt lists, from a goroutine dump, the frames in the files of the
// exercise's package, whose folder is pkg in the grader's build
// (pkg/loop.go:12), as "loop.go:12 in Step", each once, at most 8: not Go's
// runtime or testing package, not gpukit, not the hidden tests.
func stuckAt(dump, pkg string) []string {
	lines := strings.Split(dump, "\n")
	var out []string
	seen := map[string]bool{}
	for i := 1; i < len(lines) && len(out) < 8; i++ {
		m := stackFrame.FindStringSubmatch(lines[i])
		if m == nil || !strings.HasPrefix(m[1], pkg+"/") || strings.Contains(m[1], "zz_grader_") {
			continue
		}
		fn := strings.TrimPrefix(lines[i-1], "created by ")
		if j := strings.LastIndexByte(fn, '('); j > 0 {
			fn = fn[:j]
		}
		if j := strings.LastIndexByte(fn, '/'); j >= 0 {
			fn = fn[j+1:]
		}
		if j := strings.IndexByte(fn, '.'); j >= 0 {
			fn = fn[j+1:] // the package's name: the file says where
		}
		where := fmt.Sprintf("%s:%s in %s", strings.TrimPrefix(m[1], pkg+"/"), m[2], fn)
		if !seen[where] {
			seen[where] = true
			out = append(out, where)
		}
	}
	return out
}

// beforeDump is a test's output up to the timeout's goroutine dump.
func beforeDump(text string) string {
	if i := strings.Index(text, msgTimedOut); i >= 0 {
		return text[:i]
	}
	return text
}

// verdict is a test's status, and why when it did not pass, from what its
// process did: a pass only when the test itself reported it with the
// run's secret (Note [A verdict only a test that ran can give]), the
// process ended well and the test's events say it passed.
func verdict(out sandbox.Outcome, log *testLog, name, secret string, limits sandbox.Limits) (Status, string) {
	switch {
	case reported(out.Report, name, secret) && out.ExitCode == 0 && log.passed && !out.TimedOut && !out.Flooded:
		return StatusPassed, ""
	case out.TimedOut || log.saw(msgTimedOut):
		return StatusTimeout, fmt.Sprintf("stopped: the test did not finish within %s (an endless loop or a deadlock?)", limits.Test)
	case out.Flooded:
		return StatusFailed, fmt.Sprintf("killed: the test printed more than %d MiB", limits.Output>>20)
	case out.OOMKilled:
		return StatusCrashed, fmt.Sprintf("the test ran out of memory (limit %d MiB for all its processes together)", limits.AddressSpace>>20)
	case out.Signal == sigXCPU || out.Signal == syscall.SIGKILL && out.Elapsed < limits.Wall:
		return StatusCrashed, fmt.Sprintf("killed by %s: more than %s of CPU time, or too much memory", out.Signal, limits.CPU)
	case log.saw(msgThreads) || log.saw(msgNewOSProc):
		return StatusCrashed, fmt.Sprintf("the test process hit the limit of %d processes and threads", limits.Procs)
	case log.saw(msgOutOfMemory) || log.saw(msgNoMemory):
		return StatusCrashed, fmt.Sprintf("the test process ran out of memory (limit %d MiB)", limits.AddressSpace>>20)
	case log.saw(msgExit0):
		return StatusFailed, "the code called os.Exit(0) during the test; no points"
	case !log.ran && out.ExitCode == 0:
		return StatusFailed, "the process exited with status 0 before the test ran (os.Exit in an init function?); no points"
	case !log.ran:
		return StatusCrashed, "the test did not start: the package failed while loading (a panic in an init function?)"
	case out.Signal != 0:
		return StatusCrashed, "the test process was killed by " + out.Signal.String()
	case log.passed:
		return StatusFailed, "the test did not report its own pass after it ran; no points"
	default:
		return StatusFailed, ""
	}
}

// randomSecret is the secret of one test process: 64 hex digits (Note [A
// verdict only a test that ran can give]).
func randomSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("grader: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// reported reports whether the test process's verdict pipe says, with the
// run's secret, that test name passed and that TestMain finished after it.
func reported(report []byte, name, secret string) bool {
	lines := strings.Split(string(report), "\n")
	return contains(lines, "pass "+name+" "+secret) && contains(lines, "done "+secret)
}

// redactor keeps the hidden tests out of feedback: it removes every line
// that quotes their source, replaces their file names and lines (and the
// generated TestMain's) by "[hidden test]" and their reserved names (Note
// [Reserved names of the hidden tests]), qualified by the package or not,
// by "[hidden]", and shortens the grader's temporary paths.
type redactor struct {
	lines  []string
	files  *regexp.Regexp // a hidden file's name, with its folder and line
	idents *regexp.Regexp // a reserved name, with pkg. before it if so qualified
}

// newRedactor prepares a redactor for the hidden tests of package pkg.
func newRedactor(pkg string, hidden *hiddenTests) *redactor {
	r := &redactor{}
	seen := map[string]bool{}
	files := []string{`zz_grader_main_\w+_test\.go`}
	for _, s := range hidden.original {
		files = append(files, regexp.QuoteMeta(s.name))
	}
	for _, s := range append(append([]source(nil), hidden.original...), hidden.files...) {
		for _, l := range strings.Split(string(s.data), "\n") {
			l = strings.TrimSpace(l)
			// Short lines ("}", "t.Helper()") say nothing and would hide
			// ordinary output.
			if len(l) >= 24 && !seen[l] {
				seen[l] = true
				r.lines = append(r.lines, l)
			}
		}
	}
	r.files = regexp.MustCompile(`(?:[^\s:"']*/)?\b(?:` + strings.Join(files, "|") + `)(?::\d+)*`)
	if hidden.prefix != "" {
		r.idents = regexp.MustCompile(`(?:\b` + regexp.QuoteMeta(pkg) + `\.(?:\(\*?)?)?` + regexp.QuoteMeta(hidden.prefix) + `\w*`)
	}
	return r
}

// tempPath is where a build's sources lay: its temporary folder, which
// compiler messages name, or the module path, which -trimpath puts in the
// binary for stack traces.
var tempPath = regexp.MustCompile(`(/[^\s:]*)?/grader-[0-9]+/mod/|\b` + regexp.QuoteMeta(submissionModule) + `/`)

func (r *redactor) clean(s string) string {
	s = tempPath.ReplaceAllString(s, "")
	s = gradedName.ReplaceAllString(s, "")
	if r == nil {
		return s
	}
	s = r.files.ReplaceAllString(s, "[hidden test]")
	if r.idents != nil {
		s = r.idents.ReplaceAllString(s, "[hidden]")
	}
	out := strings.Split(s, "\n")
	for i, l := range out {
		for _, h := range r.lines {
			if strings.Contains(l, h) {
				out[i] = "[a line quoting the hidden tests was removed]"
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// compilerMessages keeps of the compiler's output what concerns the
// student's files, and says in one sentence what concerns the rest: a name
// that the student's package and the hidden tests both declare is "a name
// the grader uses", without saying which or where; an error in the tests
// (a changed signature) is one sentence, without quoting them.
func (r *redactor) compilerMessages(s string, studentFiles []string) string {
	var out []string
	said := map[string]bool{}
	say := func(l string) {
		if !said[l] {
			said[l] = true
			out = append(out, l)
		}
	}
	lines := strings.Split(s, "\n")
	keepNotes := true // the notes below an error go with it
	for i, l := range lines {
		m := compilerError.FindStringSubmatch(l)
		if !strings.HasPrefix(l, "\t") {
			keepNotes = m == nil || contains(studentFiles, filepath.Base(m[1])) && !nameClash.MatchString(m[2])
		}
		switch {
		case m == nil && strings.HasPrefix(l, "\t"):
			// A note on the line above: "other declaration of x" points
			// into the package's other files; "imports x from sum.go"
			// says why a package cannot be loaded.
			if n := compilerError.FindStringSubmatch(l[1:]); keepNotes && (n == nil || contains(studentFiles, filepath.Base(n[1]))) {
				out = append(out, l)
			}
			continue
		case m == nil:
			say(l)
		case !contains(studentFiles, filepath.Base(m[1])) && nameClash.MatchString(m[2]):
			// Reported where the tests declare it; the note below says
			// where the student does.
			loc := "your code"
			if i+1 < len(lines) {
				if n := compilerError.FindStringSubmatch(strings.TrimPrefix(lines[i+1], "\t")); n != nil && contains(studentFiles, filepath.Base(n[1])) {
					loc, _, _ = strings.Cut(strings.TrimPrefix(lines[i+1], "\t"), ": ")
				}
			}
			say(loc + ": your package declares a name the grader uses; rename it")
		case !contains(studentFiles, filepath.Base(m[1])):
			say("the grader's tests do not compile with your code: keep the names and signatures of the exercise's stub, and do not declare names of your own that the grader's files use")
		case nameClash.MatchString(m[2]):
			loc, _, _ := strings.Cut(l, ": ")
			say(loc + ": your package declares a name the grader uses; rename it")
		default:
			say(l)
		}
	}
	return r.clean(strings.Join(out, "\n"))
}

var nameClash = regexp.MustCompile(`redeclared|already declared|other declaration of|field and method with the same name|duplicate method`)

// stripControl removes the characters that a terminal or a viewer obeys
// instead of showing: C0 controls but newline and tab (carriage return,
// escape), DEL, C1 controls and Unicode's bidirectional overrides. A
// student's output could otherwise redraw a failing line as a passing one.
func stripControl(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f,
			r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
			return -1
		}
		return r
	}, s)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	half := n / 2
	return s[:half] + "\n[... " + fmt.Sprint(len(s)-n) + " bytes cut ...]\n" + s[len(s)-half:]
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// nonTest returns the files that are not tests.
func nonTest(files []source) []source {
	var out []source
	for _, f := range files {
		if !strings.HasSuffix(f.name, "_test.go") {
			out = append(out, f)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func allNil(m map[string][]byte) bool {
	for _, v := range m {
		if v != nil {
			return false
		}
	}
	return true
}

func roundSeconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

// Check runs the exercise's public tests on the working copy in
// exercises/NN-name (or on the package in dir when dir is not empty), each
// test in its own process with the same limits as grading but without the
// namespace sandbox: the code is the student's own.
func (g *Grader) Check(ctx context.Context, ex *Exercise, dir string) (*Result, error) {
	if dir == "" {
		dir = ex.Dir
	}
	start := time.Now()
	names, err := testFuncs(dir, ex.Package)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("grader: %s has no public tests (*_test.go with TestXxx functions)", dir)
	}
	list, err := exerciseFiles(dir)
	if err != nil {
		return nil, err
	}
	var files []source
	for _, f := range list {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, fmt.Errorf("grader: %w", err)
		}
		files = append(files, source{f, data})
	}
	var studentFiles []string
	if ex.Spec != nil {
		studentFiles = ex.Spec.StudentFiles
	}
	res := &Result{Exercise: ex.Name, Status: "graded"}
	limits := limitsFor(ex.Spec)
	built, err := g.builder().build(ctx, ex.Package, files, names, studentFiles, limits)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(built.workDir)
	if built.bin == nil {
		res.Status = "compile_error"
		res.Output = stripControl("Your code does not compile:\n" + indent(studentPaths(built.errors, ex.Package, g.relToCourse(dir))))
	}
	tests := make([]TestSpec, len(names))
	for i, name := range names {
		tests[i] = TestSpec{Name: name}
		if ex.Spec != nil {
			for _, t := range ex.Spec.Tests {
				if t.Name == name {
					tests[i].Points, tests[i].Description = t.Points, t.Description
				}
			}
		}
		res.MaxScore += tests[i].Points
	}
	if err := g.score(ctx, built.bin, tests, limits, nil, "", res); err != nil {
		return nil, err
	}
	res.ExecutionTime = time.Since(start)
	res.Seconds = roundSeconds(res.ExecutionTime)
	return res, nil
}
