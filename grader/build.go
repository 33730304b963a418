package grader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpumem/course/grader/sandbox"
)

// source is one file of the package to build.
type source struct {
	name string
	data []byte
}

// binary is a built test binary, alone in its folder, and how its tests
// are run: each with testArgs(name, timeout), each reporting its verdict
// (Note [A verdict only a test that ran can give]).
type binary struct {
	path    string
	timeout time.Duration
	pkg     string // the package's folder, as its files appear in stacks (pkg/file.go)
}

// maxSourceBytes bounds one submitted file.
const maxSourceBytes = 1 << 20

// checkStudentFile returns why a submitted file cannot be compiled as part
// of the exercise's package, or "": too large, does not parse, another
// package, or an import or directive the policy refuses (Note [Allow, do
// not deny]).
func checkStudentFile(name string, data []byte, pkg string, p policy) string {
	if len(data) > maxSourceBytes {
		return fmt.Sprintf("%s is larger than %d bytes", name, maxSourceBytes)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, data, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return fmt.Sprintf("%s does not parse: %v", name, err)
	}
	if f.Name.Name != pkg {
		return fmt.Sprintf("%s declares package %s; the exercise's package is %s", name, f.Name.Name, pkg)
	}
	return p.checkSource(fset, name, f)
}

func randomIdent() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("grader: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// testArgs are the arguments of the process that runs test name, exactly;
// the generated TestMain refuses any other (Note [A verdict only a test
// that ran can give]).
func testArgs(name string, timeout time.Duration) []string {
	return []string{"-test.run", "^" + name + "$", "-test.v=test2json", "-test.count=1",
		"-test.paniconexit0", "-test.timeout", timeout.String()}
}

// Note [A verdict only a test that ran can give]
//
// A test passes when the test itself says so, after it ran, with the run's
// secret; nothing else about the process is trusted (not m.Run's result,
// which a skipped or unmatched test also gives, not its exit status, not
// its output). The grader renames each graded test function (TestSum
// becomes graded_<id>_TestSum, a name no student can know) and generates
// a TestSum that registers a cleanup, then calls it. The cleanup runs
// after the test and its subtests ended, also after t.FailNow and after a
// panic (which marks the test failed first); it writes "pass TestSum
// <secret>" to the verdict pipe (fd 4) only when the test neither failed
// nor was skipped and the process is still as the grader started it: the
// arguments exactly testArgs, every flag at the value the grader passed
// or at its default (after flag.Parse, and again at the verdict), and
// GOMAXPROCS 1 when the grader set it. TestMain reads the secret from fd 3
// (a pipe the grader writes once and closes: a per-run secret, never in
// the binary, its arguments or its environment; without it no test runs,
// so the binary cannot be run again from inside a test), checks the same
// before m.Run, and writes "done <secret>" after m.Run when all still holds and
// m.Run returned 0. The grader counts a pass only with both lines, the
// right secret and the test's own PASS event. The student's code cannot
// write to those pipes, read the secret, change the arguments or flags,
// or raise GOMAXPROCS: it may import none of os, flag, runtime, syscall,
// unsafe or reflect (Note [Allow, do not deny]).

// mainFile is the generated TestMain and a wrapper for each test of tests
// (each calls graded_<id>_<test>). Its identifiers carry the random id,
// so package code cannot name them.
func mainFile(pkg, id string, tests []string, timeout time.Duration, serial bool) source {
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\nimport (\n\tflag%[2]s \"flag\"\n\tos%[2]s \"os\"\n\truntime%[2]s \"runtime\"\n\tstrings%[2]s \"strings\"\n\ttesting%[2]s \"testing\"\n)\n\n", pkg, id)
	// The verdict pipe is opened once and held for the process's life:
	// an *os.File that is dropped is closed by the collector, which would
	// close fd 4 under the next write.
	fmt.Fprintf(&b, "var (\n\tsecret%[1]s  string\n\tverdicts%[1]s *os%[1]s.File\n)\n\n", id)
	for _, t := range tests {
		fmt.Fprintf(&b, "func %[2]s(t *testing%[1]s.T) {\n\tt.Cleanup(func() { verdict%[1]s(t, %[2]q) })\n\tgraded_%[1]s_%[2]s(t)\n}\n\n", id, t)
	}
	args := testArgs("NAME", timeout)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(a)
	}
	fmt.Fprintf(&b, `// changed%[1]s says what differs from the process the grader started
// to run test name, or "".
func changed%[1]s(name string) string {
	want := []string{%[2]s}
	for i := range want {
		want[i] = strings%[1]s.ReplaceAll(want[i], "NAME", name)
	}
	got := os%[1]s.Args[1:]
	if len(got) != len(want) {
		return "arguments"
	}
	for i := range want {
		if got[i] != want[i] {
			return "arguments"
		}
	}
	passed := map[string]string{"test.run": "^" + name + "$", "test.v": "test2json", "test.count": "1",
		"test.paniconexit0": "true", "test.timeout": %[3]q}
	why := ""
	flag%[1]s.VisitAll(func(f *flag%[1]s.Flag) {
		want, ok := passed[f.Name]
		if !ok {
			want = f.DefValue
		}
		if f.Value.String() != want {
			why = "flag " + f.Name
		}
	})
	if why == "" && flag%[1]s.NArg() != 0 {
		why = "arguments"
	}
	if why == "" && %[4]t && runtime%[1]s.GOMAXPROCS(0) != 1 {
		why = "GOMAXPROCS"
	}
	return why
}

// verdict%[1]s reports that test name passed, when it did, after it ran.
func verdict%[1]s(t *testing%[1]s.T, name string) {
	if t.Failed() || t.Skipped() || secret%[1]s == "" {
		return
	}
	if why := changed%[1]s(name); why != "" {
		os%[1]s.Stderr.WriteString("grader: the test process was changed while the test ran (" + why + "); nothing was graded\n")
		return
	}
	verdicts%[1]s.WriteString("pass " + name + " " + secret%[1]s + "\n")
}

func TestMain(m *testing%[1]s.M) {
	flag%[1]s.Parse()
	name := strings%[1]s.TrimSuffix(strings%[1]s.TrimPrefix(flag%[1]s.Lookup("test.run").Value.String(), "^"), "$")
	if why := changed%[1]s(name); why != "" {
		os%[1]s.Stderr.WriteString("grader: the test flags were changed before the tests ran (" + why + "); nothing was graded\n")
		os%[1]s.Exit(1)
	}
	buf := make([]byte, 65)
	secretPipe := os%[1]s.NewFile(3, "secret")
	n, _ := secretPipe.Read(buf)
	secretPipe.Close()
	verdicts%[1]s = os%[1]s.NewFile(4, "verdict")
	if n != 64 || verdicts%[1]s == nil {
		// Run again by the code under test (/proc/self/exe), or by hand.
		os%[1]s.Stderr.WriteString("grader: this test binary runs only under the grader\n")
		os%[1]s.Exit(1)
	}
	secret%[1]s = string(buf[:n])
	code := m.Run()
	if why := changed%[1]s(name); code == 0 && why == "" && secret%[1]s != "" {
		verdicts%[1]s.WriteString("done " + secret%[1]s + "\n")
	}
	os%[1]s.Exit(code)
}
`, id, strings.Join(quoted, ", "), timeout.String(), serial)
	return source{name: "zz_grader_main_" + id[:8] + "_test.go", data: []byte(pipeFiles(b.String(), id))}
}

// renameTests gives each test function of tests declared in the test files
// the name graded_<id>_<test>: mainFile declares the test under its own
// name. Only the declaration changes, in place (same lines); a graded test
// that other code calls does not compile (verify says so).
func renameTests(files []source, tests []string, id string) []source {
	out := make([]source, len(files))
	for i, f := range files {
		out[i] = f
		if !strings.HasSuffix(f.name, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		af, err := parser.ParseFile(fset, f.name, f.data, parser.SkipObjectResolution)
		if err != nil {
			continue // the compiler will say what is wrong
		}
		var b strings.Builder
		last := 0
		for _, d := range af.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !contains(tests, fn.Name.Name) {
				continue
			}
			at := fset.Position(fn.Name.Pos()).Offset
			b.Write(f.data[last:at])
			b.WriteString("graded_" + id + "_")
			last = at
		}
		b.Write(f.data[last:])
		out[i] = source{f.name, []byte(b.String())}
	}
	return out
}

// gradedName matches the prefix renameTests gives, which stack traces show.
var gradedName = regexp.MustCompile(`\bgraded_[0-9a-f]{24}_`)

var (
	compilerError = regexp.MustCompile(`(?m)^(\S+\.go):\d+(?::\d+)?: (.*)$`)
	moduleTrouble = regexp.MustCompile(`module lookup disabled|no required module provides|missing go\.sum entry|cannot find module|malformed module path|verifying module`)
)

// BuildLimits bound the compilation of a submission: a program of a few
// lines can make the compiler use terabytes (constants that double).
type BuildLimits struct {
	Memory int64         // bytes of address space of each process of the build (RLIMIT_AS)
	Time   time.Duration // the whole build, wall clock; also each process's CPU time
}

// DefaultBuildLimits: the course's packages compile in well under 1 GiB
// and, with a warm build cache, in seconds; a cold cache (the standard
// library) took about 80 s on two busy cores.
var DefaultBuildLimits = BuildLimits{Memory: 2 << 30, Time: 5 * time.Minute}

// buildUID is the unprivileged uid that compiles submissions when the
// grader runs as root: not one of the tests' (which could otherwise write
// to its build cache), with read access to everything (CAP_DAC_READ_SEARCH:
// the course, the module cache, the toolchain) and write access only to
// its build cache and the build's folder.
const buildUID = sandbox.BuildUID

// builder compiles packages into test binaries in a temporary module.
type builder struct {
	course  *Course
	goCmd   string
	limits  BuildLimits
	exports *onceCache[map[string]string] // the grader's, shared by its builders; nil: none
}

// errBuildLimit says that a build went past its limits.
type errBuildLimit struct{ why string }

func (e errBuildLimit) Error() string { return e.why }

// buildResult is a built binary, or the compiler's complaint.
type buildResult struct {
	bin      *binary
	errors   string          // the compiler's output when the build failed
	badFiles map[string]bool // student files the compiler complained about
	workDir  string          // remove when done
}

// build compiles files (the package's non-test files and its tests) plus a
// generated TestMain for tests into a binary under a new temporary folder,
// and deletes every source before returning.
func (b *builder) build(ctx context.Context, pkg string, files []source, tests []string, studentFiles []string, limits sandbox.Limits) (*buildResult, error) {
	work, err := os.MkdirTemp(sandbox.TempBase(), "grader-")
	if err != nil {
		return nil, fmt.Errorf("grader: %w", err)
	}
	res := &buildResult{workDir: work}
	fail := func(err error) (*buildResult, error) {
		os.RemoveAll(work)
		return nil, err
	}
	// Each test runs a link to the binary from a folder of its own; the
	// build's uid must only pass through this one (0711) to the folders
	// it is given.
	if err := os.Chmod(work, 0o711); err != nil {
		return fail(fmt.Errorf("grader: %w", err))
	}
	mod := filepath.Join(work, "mod")
	binDir := filepath.Join(work, "bin")
	if err := os.Mkdir(mod, 0o700); err != nil {
		return fail(fmt.Errorf("grader: %w", err))
	}
	if err := os.Mkdir(binDir, 0o700); err != nil {
		return fail(fmt.Errorf("grader: %w", err))
	}
	// Mkdir's mode passes through the umask (077 for an instructor who
	// keeps the gradebook private): set it whatever the umask.
	if err := os.Chmod(binDir, 0o711); err != nil {
		return fail(fmt.Errorf("grader: %w", err))
	}
	goMod, err := b.tempGoMod()
	if err != nil {
		return fail(err)
	}
	sum, err := os.ReadFile(filepath.Join(b.course.Root, "go.sum"))
	if err != nil {
		return fail(fmt.Errorf("grader: the course's go.sum: %w", err))
	}
	id, err := randomIdent()
	if err != nil {
		return fail(err)
	}
	main := mainFile(pkg, id, tests, limits.Test, limits.Serial)
	files = renameTests(files, tests, id)
	pkgDir := filepath.Join(mod, pkg)
	if err := os.Mkdir(pkgDir, 0o700); err != nil {
		return fail(fmt.Errorf("grader: %w", err))
	}
	writes := append([]source{{"../go.mod", goMod}, {"../go.sum", sum}, main}, files...)
	for _, f := range writes {
		if err := os.WriteFile(filepath.Join(pkgDir, f.name), f.data, 0o600); err != nil {
			return fail(fmt.Errorf("grader: %w", err))
		}
	}
	binPath := filepath.Join(binDir, pkg+".test")
	outDir := filepath.Join(work, "out") // the build's, then the binary is moved to binDir
	tmpDir := filepath.Join(work, "tmp")
	for _, d := range []string{outDir, tmpDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fail(fmt.Errorf("grader: %w", err))
		}
	}
	out, runErr := b.runGo(ctx, mod, []string{mod, outDir, tmpDir}, tmpDir,
		"test", "-c", "-vet=off", "-o", filepath.Join(outDir, pkg+".test"), "./"+pkg)
	// Every source goes before any student code runs.
	if err := os.RemoveAll(mod); err != nil {
		return fail(fmt.Errorf("grader: removing the sources: %w", err))
	}
	if ctx.Err() != nil {
		return fail(ctx.Err())
	}
	var limit errBuildLimit
	if errors.As(runErr, &limit) {
		res.errors = limit.why
		res.badFiles = map[string]bool{}
		return res, nil
	}
	if runErr == nil {
		runErr = os.Rename(filepath.Join(outDir, pkg+".test"), binPath)
		if runErr == nil {
			runErr = ownBinary(binPath)
		}
		if runErr != nil {
			return fail(fmt.Errorf("grader: %w", runErr))
		}
	}
	if runErr != nil {
		if _, ok := runErr.(*exec.ExitError); !ok {
			return fail(fmt.Errorf("grader: running go test -c: %w", runErr))
		}
		// Whose failure it is, the code's or the grader's, the caller
		// decides (by building the stub when no student file is named).
		res.errors = cleanCompilerOutput(out, mod)
		res.badFiles = map[string]bool{}
		// Notes on an error ("\tsum.go:3:6: other declaration of x") name
		// a file too.
		for _, m := range compilerError.FindAllStringSubmatch(strings.ReplaceAll(res.errors, "\n\t", "\n"), -1) {
			if file := filepath.Base(m[1]); contains(studentFiles, file) {
				res.badFiles[file] = true
			}
		}
		return res, nil
	}
	// Execute-only: the test process cannot read its own binary (which
	// also makes it non-dumpable: /proc/self/mem is root's).
	if err := os.Chmod(binPath, 0o111); err != nil {
		return fail(fmt.Errorf("grader: %w", err))
	}
	res.bin = &binary{path: binPath, timeout: limits.Test, pkg: pkg}
	return res, nil
}

// overBuildLimit matches what the go command prints when a compiler
// process ran out of its address space or CPU time.
var overBuildLimit = regexp.MustCompile(`out of memory|cannot allocate memory|signal: killed|CPU time limit exceeded|signal: cpu time|SIGXCPU|file size limit exceeded|SIGXFSZ|file too large`)

// buildFileSize bounds each file a build writes (RLIMIT_FSIZE): the
// course's largest test binary is about 20 MiB, its largest cached
// package 13 MiB.
const buildFileSize = 128 << 20

// bigCacheEntry: a file the build put in the cache larger than this is
// removed after the build.
const bigCacheEntry = 32 << 20

// MaxBuildCache is the size the grader's build cache is trimmed to after
// each batch (TrimBuildCache), the entries used longest ago going first.
const MaxBuildCache = 2 << 30

// removeNewCacheEntries removes the regular files larger than
// bigCacheEntry that the build cache dir gained since since; it follows
// no symlink. It reads only the folders changed since then: the go
// command creates each entry in one of the cache's 256 folders (00 to
// ff), which changes that folder's time, and rewrites none in place. A
// class's cache holds about 30,000 entries; reading them all after every
// build took 0.17 s (0.45 s in the grader's tests under -race), more
// than the link of a small exercise.
func removeNewCacheEntries(dir string, since time.Time) {
	folders, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, folder := range folders {
		if !folder.IsDir() { // a link is not a folder here: not followed
			continue
		}
		if info, err := folder.Info(); err != nil || info.ModTime().Before(since) {
			continue
		}
		path := filepath.Join(dir, folder.Name())
		entries, err := os.ReadDir(path)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			if info, err := e.Info(); err == nil && !info.ModTime().Before(since) && info.Size() > bigCacheEntry {
				os.Remove(filepath.Join(path, e.Name()))
			}
		}
	}
}

// TrimBuildCache trims the grader's own build cache (root's, the one its
// builds use as buildUID) to MaxBuildCache, removing the files used
// longest ago first (the go command refreshes a used entry's time). A
// grader that is not root uses the user's cache, which it leaves alone.
func TrimBuildCache() error {
	if os.Geteuid() != 0 {
		return nil
	}
	dir, err := buildCache()
	if err != nil {
		return err
	}
	type entry struct {
		path string
		size int64
		mod  time.Time
	}
	var entries []entry
	var total int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			entries = append(entries, entry{p, info.Size(), info.ModTime()})
			total += info.Size()
		}
		return nil
	})
	sort.Slice(entries, func(i, j int) bool { return entries[i].mod.Before(entries[j].mod) })
	for _, e := range entries {
		if total <= MaxBuildCache {
			break
		}
		if os.Remove(e.path) == nil {
			total -= e.size
		}
	}
	return nil
}

// capDACReadSearch is CAP_DAC_READ_SEARCH (linux/capability.h).
const capDACReadSearch = 2

// buildCache is buildUID's build cache: a folder of its own (0700) in the
// grader's cache folder, so that no test's uid can write what later builds
// use, and warm from one build to the next.
func buildCache() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("grader: %w", err)
	}
	dir := filepath.Join(base, "gpumem-grader", fmt.Sprintf("go-build-%d", buildUID))
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("grader: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("grader: %w", err)
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("grader: %w", err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("grader: the build cache %s is not a folder", dir)
	}
	if err := os.Chown(dir, buildUID, buildUID); err != nil {
		return "", fmt.Errorf("grader: %w", err)
	}
	return dir, os.Chmod(dir, 0o700)
}

// chownTree gives dir and what it holds to uid; symlinks themselves, never
// their targets.
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

// tempGoMod is the go.mod of the temporary module: the course's go
// version, and the course itself, required and replaced by its folder.
func (b *builder) tempGoMod() ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(b.course.Root, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("grader: %w", err)
	}
	goLine := "go 1.26"
	if m := regexp.MustCompile(`(?m)^go\s+(\S+)\s*$`).FindSubmatch(data); m != nil {
		goLine = "go " + string(m[1])
	}
	return fmt.Appendf(nil, "module %s\n\n%s\n\nrequire %s v0.0.0-00010101000000-000000000000\n\nreplace %s => %s\n",
		submissionModule, goLine, ModulePath, ModulePath, strconv.Quote(b.course.Root)), nil
}

// submissionModule is the module path of a grading build.
const submissionModule = "grader.local/submission"

// buildEnv is the go command's environment for a grading build: offline
// (modules come from the module cache or a file:// proxy), modules
// resolved from go.sum without touching the course's go.mod, no workspace.
func buildEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CGO_ENABLED", "GOFLAGS", "GOPROXY", "GOWORK", "GONOSUMDB", "GOSUMDB", "GONOSUMCHECK", "GOINSECURE", "GOPRIVATE", "GONOPROXY":
			continue
		}
		env = append(env, kv)
	}
	// A file:// proxy (the Gradescope bundle's module cache) is offline
	// too; anything else is replaced by off.
	proxy := "off"
	if p := os.Getenv("GOPROXY"); strings.HasPrefix(p, "file://") && !strings.ContainsAny(p, ",|") {
		proxy = p
	}
	// Without cgo a test binary is static and makes its threads itself:
	// no C thread stacks or malloc arenas eat into the address-space
	// limit, so how much memory a test may use does not depend on how
	// many threads the runtime happens to start. -trimpath keeps the
	// course's folder out of the binaries and out of the build cache's
	// keys (a course cloned afresh reuses the packages compiled for the
	// last one); -ldflags=-w leaves out the DWARF debug data no one reads
	// (a sixth of verify's CPU time went to writing it; stack traces come
	// from the symbol table, which stays).
	return append(env, "CGO_ENABLED=0", "GOFLAGS=-mod=mod -buildvcs=false -trimpath -ldflags=-w", "GOPROXY="+proxy, "GOWORK=off", "GOSUMDB=off")
}

// cleanCompilerOutput shortens the temporary paths in the compiler's output
// to file names.
func cleanCompilerOutput(s, mod string) string {
	s = strings.ReplaceAll(s, mod+string(filepath.Separator), "")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l == "FAIL" || strings.HasPrefix(l, "FAIL\t") || strings.HasPrefix(l, "# ") || strings.HasPrefix(l, "go: downloading ") {
			continue
		}
		lines = append(lines, strings.TrimPrefix(l, "./"))
	}
	return strings.Join(lines, "\n")
}
