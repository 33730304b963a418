// Command grader checks and grades the course's exercises.
//
//	grader check NN-name                  the public tests on your working copy
//	grader grade --exercise NN-name --submission DIR [--format text|json|gradescope] [--out FILE]
//	grader batch --exercise NN-name --submissions DIR --out grades.csv [--jobs N] [--feedback DIR] [--shard I/N] [--regrade]
//	grader bundle --exercise NN-name --out autograder.zip [--go-tarball FILE]
//	grader verify [NN-name ...] [--jobs N] solutions and extras score full marks, mutants lose points, stubs zero
//	grader release --out DIR              the student edition (no solutions, no hidden tests)
//	grader collect --exercise NN-name --out DIR STUDENT...     (root) the class's files, read safely from their homes
//	grader handback --exercise NN-name --feedback DIR [--submissions DIR] STUDENT...  (root) their feedback, written back
//
// Every command finds the course from the current folder, or takes
// --course DIR. Exit status: 0 when the command did its work (for grade
// and check, whatever the score), 1 when it failed (or verify found a
// problem, or check --strict a failing test), 2 for a usage error.
// grader/README.md documents formats, commands and the security model.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/gpumem/course/grader"
	"github.com/gpumem/course/grader/sandbox"
	"github.com/gpumem/course/internal/atomicfile"
)

const usage = `usage: grader COMMAND [flags]

  check NN-name        run the public tests on your working copy in exercises/NN-name
  grade                grade one submission against the hidden tests
  batch                grade a folder of submissions (one sub-folder per student) into a CSV
  bundle               write a Gradescope autograder zip for one exercise
  verify [NN-name...]  check that every solution scores full marks, every mutant loses points, every stub scores zero
  release              write the student edition of the course (no solutions, no hidden tests)
  collect              (root, class server) copy each student's files out of their home, following no link
  handback             (root, class server) write each student's feedback into their home, following no link

Run grader COMMAND -h for a command's flags.
`

// errUsage marks errors that are the caller's (exit status 2).
type errUsage struct{ msg string }

func (e errUsage) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	commands := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"check": cmdCheck, "grade": cmdGrade, "batch": cmdBatch, "bundle": cmdBundle,
		"verify": cmdVerify, "release": cmdRelease, "collect": cmdCollect, "handback": cmdHandback,
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "grader: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	err := cmd(ctx, args[1:], stdout, stderr)
	var u errUsage
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &u):
		fmt.Fprintln(stderr, "grader:", u.msg)
		return 2
	case errors.Is(err, grader.ErrNoExercise):
		fmt.Fprintln(stderr, err)
		return 2
	default:
		fmt.Fprintln(stderr, strings.TrimPrefix(err.Error(), "grader: ")+"")
		return 1
	}
}

// parse parses flags placed before or after the positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	// The flag package would print the usage itself, on -h and on every
	// error, before returning: it is printed here, once, and only for -h.
	fs.SetOutput(io.Discard)
	usage := fs.Usage
	fs.Usage = func() {}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(os.Stderr)
				usage()
				return nil, err
			}
			return nil, errUsage{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

type common struct {
	course  string
	sandbox string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.course, "course", "", "the course's root folder (default: found from the current folder)")
	fs.StringVar(&c.sandbox, "sandbox", "auto", "auto (bubblewrap when it works), bwrap (required), limits (rlimits only) or none (limits; off Linux, where grade, batch and verify need it said)")
}

// findCourse opens the course of --course, or the one the current folder
// is in.
func (c *common) findCourse() (*grader.Course, error) {
	if c.course != "" {
		return grader.OpenCourse(c.course)
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return grader.FindCourse(wd)
}

func (c *common) open(stderr io.Writer, defaultMode sandbox.Mode) (*grader.Grader, error) {
	course, err := c.findCourse()
	if err != nil {
		return nil, err
	}
	mode := defaultMode
	if c.sandbox != "auto" {
		if mode, err = sandbox.ParseMode(c.sandbox); err != nil {
			return nil, errUsage{err.Error()}
		}
	}
	g, err := grader.New(course, mode, stderr)
	if err != nil {
		return nil, err
	}
	if err := g.Sandbox.Usable(); err != nil {
		return nil, err
	}
	return g, nil
}

// openExercise opens the grader as open does and finds the exercise name.
func (c *common) openExercise(stderr io.Writer, defaultMode sandbox.Mode, name string) (*grader.Grader, *grader.Exercise, error) {
	g, err := c.open(stderr, defaultMode)
	if err != nil {
		return nil, nil, err
	}
	ex, err := g.Course.Exercise(name)
	if err != nil {
		return nil, nil, err
	}
	return g, ex, nil
}

// hostOS is the OS the grader runs on (runtime.GOOS; tests set another).
var hostOS = runtime.GOOS

// osGate refuses command (grade, batch, verify: they run others' code)
// on an OS other than Linux, where the grader has no sandbox (no
// bubblewrap, cgroups or uid pool: grader/sandbox), unless the flag
// --sandbox none (sandboxFlag) says that none is wanted. check, which runs
// the student's own code, works everywhere.
func osGate(goos, command, sandboxFlag string) error {
	if goos == "linux" || sandboxFlag == "none" {
		return nil
	}
	return errUsage{fmt.Sprintf("%s runs other people's code, and its sandbox needs Linux (this is %s): grade on Linux (on Windows, in WSL2), "+
		"or add --sandbox none to run that code here as you, with no sandbox", command, goos)}
}

func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var c common
	c.register(fs)
	strict := fs.Bool("strict", false, "exit with status 1 when a public test fails")
	all := fs.Bool("all", false, "check every exercise and print where you stand")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: grader check [NN-name | PATH] [--course DIR] [--strict]   (no name: the exercise folder you are in)\n       grader check --all")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *all {
		if len(pos) > 0 {
			return errUsage{"check --all takes no exercise name"}
		}
		return checkAll(ctx, &c, stdout, stderr, *strict)
	}
	if len(pos) > 1 {
		return errUsage{"check takes one exercise, like: grader check 01-shared-storage (or its folder, or none inside it)"}
	}
	name, err := exerciseArg(&c, pos)
	if err != nil {
		return err
	}
	// The code is the student's own: rlimits and a timeout, no namespaces.
	g, ex, err := c.openExercise(stderr, sandbox.ModeLimits, name)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Checking exercises/%s with its public tests...\n", ex.Name)
	res, err := g.Check(ctx, ex, "")
	if err != nil {
		return err
	}
	if err := res.WriteText(stdout, "check"); err != nil {
		return err
	}
	var studentFiles []string
	if ex.Spec != nil {
		studentFiles = ex.Spec.StudentFiles
	}
	if changed := changedGivenFiles(ex.Dir, studentFiles); len(changed) > 0 {
		verb := "differs"
		if len(changed) > 1 {
			verb = "differ"
		}
		fmt.Fprintf(stdout, "Note: %s %s from the course's (git diff HEAD): check ran your copy, but grading uses the course's own, "+
			"so a check that passes here may not at grading (git checkout -- FILE restores it).\n", strings.Join(changed, ", "), verb)
	}
	passed := res.PassedTests()
	files := "the exercise's files"
	if ex.Spec != nil {
		files = strings.Join(ex.Spec.StudentFiles, ", ")
		fmt.Fprintf(stdout, "Grading runs hidden tests worth %d points, which check more than these (edge cases, memory); see exercises/%s/README.md.\n", ex.Spec.MaxScore(), ex.Name)
	}
	if passed < len(res.Tests) {
		fmt.Fprintf(stdout, "Edit %s in exercises/%s and run the check again.\n", files, ex.Name)
		if *strict {
			return fmt.Errorf("grader: %d of %d public tests fail", len(res.Tests)-passed, len(res.Tests))
		}
	}
	return nil
}

// changedGivenFiles lists the files of the exercise folder dir, other than
// the student's own, that differ from the git commit the course is at (a
// loosened public test, an edited given file); nothing where the course is
// not a git checkout or git is missing.
func changedGivenFiles(dir string, studentFiles []string) []string {
	cmd := exec.Command("git", "diff", "--name-only", "--relative", "HEAD", "--", ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var changed []string
	for _, f := range strings.Fields(string(out)) {
		if !slices.Contains(studentFiles, f) {
			changed = append(changed, f)
		}
	}
	return changed
}

// exerciseArg finds the exercise check is asked about: a name
// (02-fragmentation), a path to its folder or a file in it
// (exercises/02-fragmentation/, ./fragment.go), or, with nothing, the
// exercise folder the current folder is in.
func exerciseArg(c *common, pos []string) (string, error) {
	arg := ""
	if len(pos) == 1 {
		arg = pos[0]
	}
	if arg != "" && !strings.ContainsAny(arg, `/\`) && arg != "." && arg != ".." {
		if _, err := os.Stat(arg); err != nil || grader.IsExerciseName(arg) {
			return arg, nil // a name
		}
	}
	path := arg
	if path == "" {
		path = "."
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if info, err := os.Stat(abs); err == nil && !info.IsDir() {
		abs = filepath.Dir(abs)
	}
	for dir := abs; ; dir = filepath.Dir(dir) {
		if filepath.Base(filepath.Dir(dir)) == "exercises" && grader.IsExerciseName(filepath.Base(dir)) {
			return filepath.Base(dir), nil
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	if arg == "" {
		return "", errUsage{"check needs an exercise: run it inside an exercise's folder, or name one, like: grader check 02-fragmentation (grader check --all checks every one)"}
	}
	return "", errUsage{fmt.Sprintf("%s is not an exercise or a folder inside exercises/NN-name", arg)}
}

// checkAll runs every exercise's public tests and prints one line each and
// where the student stands.
func checkAll(ctx context.Context, c *common, stdout, stderr io.Writer, strict bool) error {
	g, err := c.open(stderr, sandbox.ModeLimits)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(g.Course.Root, "exercises"))
	if err != nil {
		return fmt.Errorf("grader: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && grader.IsExerciseName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	fmt.Fprintf(stdout, "Checking %d exercises with their public tests (a minute or more the first time)...\n", len(names))
	// Several exercises at once, each line printed in order as soon as
	// it and those before it are done: a check is mostly a build and a
	// test run of one process, so two at a time on two cores take about
	// half as long (all 17 stubs, warm, here: 14.3–15.5 → 7.9–9.9 s).
	// At most four: each build may use hundreds of MB. The first goes
	// alone: from an empty build cache it compiles what they all share
	// (the standard library, gpukit's core, testify), which two builds at
	// once would each compile (all 17 from an empty cache, here: 49–53 s
	// one at a time, 67 s two at a time from the start, 49–58 s with the
	// first alone).
	type checked struct {
		res *grader.Result
		err error
	}
	results := make([]chan checked, len(names))
	for i := range results {
		results[i] = make(chan checked, 1)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan struct{}, min(runtime.NumCPU(), 4))
	go func() {
		for i, name := range names {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				results[i] <- checked{err: ctx.Err()}
				continue
			}
			check := func() {
				defer func() { <-slots }()
				ex, err := g.Course.Exercise(name)
				if err != nil {
					results[i] <- checked{err: err}
					return
				}
				res, err := g.Check(ctx, ex, "")
				results[i] <- checked{res, err}
			}
			if i == 0 {
				check()
			} else {
				go check()
			}
		}
	}()
	done, failing := 0, 0
	for i, name := range names {
		c := <-results[i]
		if c.err != nil {
			// The others stop, and each removes its build's folders
			// before the command returns: every exercise gets one
			// result, theirs a canceled context's error.
			cancel()
			for _, rest := range results[i+1:] {
				<-rest
			}
			return c.err
		}
		res := c.res
		passed := res.PassedTests()
		mark := "✓"
		if passed < len(res.Tests) {
			mark = "✗"
			failing++
		} else {
			done++
		}
		fmt.Fprintf(stdout, "  %s %-24s %d/%d public tests pass\n", mark, name, passed, len(res.Tests))
	}
	fmt.Fprintf(stdout, "%d of %d exercises pass all their public tests; grading also runs hidden tests (see each README).\n", done, len(names))
	if strict && failing > 0 {
		return fmt.Errorf("grader: %d exercises have failing public tests", failing)
	}
	return nil
}

func cmdGrade(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("grade", flag.ContinueOnError)
	var c common
	c.register(fs)
	exercise := fs.String("exercise", "", "the exercise, NN-name")
	submission := fs.String("submission", "", "the folder holding the student's files")
	format := fs.String("format", "text", "text, json or gradescope (results.json)")
	out := fs.String("out", "", "write the result to this file (atomically) instead of standard output")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: grader grade --exercise NN-name --submission DIR [--format text|json|gradescope] [--out FILE]")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *exercise == "" || *submission == "" {
		return errUsage{"grade needs --exercise NN-name and --submission DIR"}
	}
	if *format != "text" && *format != "json" && *format != "gradescope" {
		return errUsage{fmt.Sprintf("--format %q is not text, json or gradescope", *format)}
	}
	if *out != "" {
		if err := atomicfile.CheckWritable(*out); err != nil {
			return err
		}
	}
	if err := osGate(hostOS, "grade", c.sandbox); err != nil {
		return err
	}
	g, ex, err := c.openExercise(stderr, sandbox.ModeAuto, *exercise)
	if err != nil {
		return err
	}
	res, err := g.Grade(ctx, ex, *submission)
	if err != nil {
		return err
	}
	write := func(w io.Writer) error {
		switch *format {
		case "json":
			return grader.WriteJSON(w, res)
		case "gradescope":
			return grader.WriteJSON(w, res.Gradescope())
		}
		fmt.Fprintf(w, "grade %s: %s\n", ex.Name, *submission)
		return res.WriteText(w, "grade")
	}
	if *out != "" {
		return atomicfile.Write(*out, 0o644, write)
	}
	return write(stdout)
}

func cmdBatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("batch", flag.ContinueOnError)
	var c common
	c.register(fs)
	exercise := fs.String("exercise", "", "the exercise, NN-name")
	submissions := fs.String("submissions", "", "a folder with one sub-folder per student")
	out := fs.String("out", "grades.csv", "the grades file; students already in it are skipped")
	feedback := fs.String("feedback", "", "also write each student's results.json into this folder")
	jobs := fs.Int("jobs", max(1, runtime.NumCPU()), "students graded at once")
	shard := fs.String("shard", "", "INDEX/COUNT: grade only the students whose position (byte order) is INDEX modulo COUNT")
	regrade := fs.Bool("regrade", false, "grade the students already in --out again")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: grader batch --exercise NN-name --submissions DIR --out grades.csv [--jobs N] [--feedback DIR] [--shard I/N] [--regrade]")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *exercise == "" || *submissions == "" {
		return errUsage{"batch needs --exercise NN-name and --submissions DIR"}
	}
	if *jobs < 1 || *jobs > 64 {
		return errUsage{"--jobs must be between 1 and 64"}
	}
	index, count, err := parseShard(*shard)
	if err != nil {
		return err
	}
	if err := osGate(hostOS, "batch", c.sandbox); err != nil {
		return err
	}
	g, ex, err := c.openExercise(stderr, sandbox.ModeAuto, *exercise)
	if err != nil {
		return err
	}
	sum, err := g.Batch(ctx, ex, *submissions, grader.BatchOptions{
		Jobs: *jobs, CSV: *out, FeedbackDir: *feedback, Progress: stderr, Terminal: isTerminal(stderr),
		Regrade: *regrade, Shard: index, Shards: count,
	})
	fmt.Fprintf(stdout, "batch %s: %d graded, %d already in %s, %d failed\n", ex.Name, sum.Graded, sum.Skipped, *out, sum.Failed)
	return err
}

// parseShard reads --shard INDEX/COUNT; empty means one shard, the whole class.
func parseShard(s string) (index, count int, err error) {
	if s == "" {
		return 0, 1, nil
	}
	i, n, ok := strings.Cut(s, "/")
	index, ierr := strconv.Atoi(i)
	count, nerr := strconv.Atoi(n)
	if !ok || ierr != nil || nerr != nil || count < 1 || index < 0 || index >= count {
		return 0, 0, errUsage{fmt.Sprintf("--shard %q is not INDEX/COUNT with 0 <= INDEX < COUNT, like 0/8", s)}
	}
	return index, count, nil
}

func cmdBundle(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bundle", flag.ContinueOnError)
	var c common
	c.register(fs)
	exercise := fs.String("exercise", "", "the exercise, NN-name")
	out := fs.String("out", "autograder.zip", "the zip to write")
	tarball := fs.String("go-tarball", "", "a go1.x.linux-amd64.tar.gz to carry, so that setup downloads nothing")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *exercise == "" {
		return errUsage{"bundle needs --exercise NN-name"}
	}
	g, ex, err := c.openExercise(io.Discard, sandbox.ModeLimits, *exercise)
	if err != nil {
		return err
	}
	info, err := g.Bundle(ctx, ex, grader.BundleOptions{Out: *out, GoTarball: *tarball})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bundle %s: %s, %d files (%.1f MiB before compression), %d modules, for %s\n",
		ex.Name, *out, info.Files, float64(info.Bytes)/(1<<20), info.Modules, info.GoVersion)
	return nil
}

func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	var c common
	c.register(fs)
	jobs := fs.Int("jobs", max(1, runtime.NumCPU()), "submissions (references, extras, mutants, stubs) graded at once")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := osGate(hostOS, "verify", c.sandbox); err != nil {
		return err
	}
	g, err := c.open(stderr, sandbox.ModeAuto)
	if err != nil {
		return err
	}
	rep, err := g.Verify(ctx, pos, *jobs, stdout)
	if err != nil {
		return err
	}
	if len(rep.Failed) > 0 {
		return fmt.Errorf("grader: verify: %d problems (listed above)", len(rep.Failed))
	}
	return nil
}

func cmdRelease(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	var c common
	c.register(fs)
	out := fs.String("out", "", "a new or empty folder for the student edition")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *out == "" {
		return errUsage{"release needs --out DIR"}
	}
	g, err := c.open(io.Discard, sandbox.ModeLimits)
	if err != nil {
		return err
	}
	n, err := g.Course.Release(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "release: %d files written to %s (no solutions/, no grader/hidden/)\n", n, *out)
	return nil
}
