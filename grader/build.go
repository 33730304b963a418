package grader

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// source is one file of the package to build.
type source struct {
	name string
	data []byte
}

// binary is a built test binary, alone in its folder, and the exit code
// that means "passed" for each of its tests.
type binary struct {
	path  string
	codes map[string]int // test name → exit code of a pass
}

// maxSourceBytes bounds one submitted file.
const maxSourceBytes = 1 << 20

// forbiddenImports may not appear in a student's file: they could reach the
// grader's machinery (test framework, raw system calls, the binary's own
// memory or files embedded at build time) instead of solving the exercise.
var forbiddenImports = map[string]string{
	"C":             "cgo",
	"unsafe":        "raw memory access",
	"reflect":       "raw memory access through unsafe pointers",
	"text/template": "reflection",
	"html/template": "reflection",
	"syscall":       "raw system calls",
	"embed":         "embedding files at build time",
	"plugin":        "loading code",
	"os/exec":       "running programs",
	"os/signal":     "signal handling",
	"testing":       "the test framework is the grader's",
	"runtime/debug": "runtime internals",
	"net":           "networking",
	"net/http":      "networking",
}

var forbiddenPrefixes = []string{"testing/", "golang.org/x/sys/", "net/", "runtime/cgo", "internal/", "vendor/", "cmd/"}

// forbiddenDirective matches compiler directives a student file may not use.
// A line directive (//line at the start of a line, /*line anywhere) would
// make the compiler blame another file for the student's errors.
var forbiddenDirective = regexp.MustCompile(`(?m)^\s*//(go:(linkname|embed|cgo_[a-z_]+|build)|\s*\+build|line )|/\*line\s`)

// checkStudentFile returns why a submitted file cannot be compiled as part
// of the exercise's package, or "".
func checkStudentFile(name string, data []byte, pkg string) string {
	if len(data) > maxSourceBytes {
		return fmt.Sprintf("%s is larger than %d bytes", name, maxSourceBytes)
	}
	f, err := parser.ParseFile(token.NewFileSet(), name, data, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		return fmt.Sprintf("%s does not parse: %v", name, err)
	}
	if f.Name.Name != pkg {
		return fmt.Sprintf("%s declares package %s; the exercise's package is %s", name, f.Name.Name, pkg)
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		why, bad := forbiddenImports[path]
		for _, p := range forbiddenPrefixes {
			if strings.HasPrefix(path, p) {
				why, bad = "not allowed in an exercise", true
			}
		}
		if bad {
			return fmt.Sprintf("%s imports %q (%s), which graded code may not use", name, path, why)
		}
	}
	if m := forbiddenDirective.Find(data); m != nil {
		return fmt.Sprintf("%s uses the directive %q, which graded code may not use", name, strings.TrimSpace(string(m)))
	}
	return ""
}

// randomCodes gives each test a distinct exit code in 3..125 (1 and 2 are
// the test framework's failure and panic codes; 126 and above are the
// shell's and signals').
func randomCodes(tests []string) (map[string]int, error) {
	pool := make([]int, 0, 123)
	for c := 3; c <= 125; c++ {
		pool = append(pool, c)
	}
	if len(tests) > len(pool) {
		return nil, fmt.Errorf("grader: %d tests; at most %d can be graded in one exercise", len(tests), len(pool))
	}
	codes := make(map[string]int, len(tests))
	for _, t := range tests {
		i, err := rand.Int(rand.Reader, big.NewInt(int64(len(pool))))
		if err != nil {
			return nil, fmt.Errorf("grader: %w", err)
		}
		k := int(i.Int64())
		codes[t] = pool[k]
		pool = append(pool[:k], pool[k+1:]...)
	}
	return codes, nil
}

func randomIdent() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("grader: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// tempBase is the folder for the grader's temporary folders: the system's,
// unless the grader runs as root and some folder on that path is closed to
// other users (the tests' uids must reach their binary), then /tmp.
func tempBase() string {
	dir := os.TempDir()
	if os.Geteuid() != 0 {
		return dir
	}
	for d := dir; ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil || info.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// mainFile is the generated TestMain. Its identifiers carry a random
// suffix, so package code cannot name them; it refuses changed test flags
// (a package init can rewrite os.Args) and exits with the code of the one
// test that -test.run names, only when that test passed.
func mainFile(pkg string, codes map[string]int) (source, error) {
	id, err := randomIdent()
	if err != nil {
		return source{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\nimport (\n\tflag%[2]s \"flag\"\n\tos%[2]s \"os\"\n\ttesting%[2]s \"testing\"\n)\n\n", pkg, id)
	fmt.Fprintf(&b, "var codes%s = map[string]int{\n", id)
	names := make([]string, 0, len(codes))
	for n := range codes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "\t%q: %d,\n", "^"+n+"$", codes[n])
	}
	fmt.Fprintf(&b, `}

func TestMain(m *testing%[1]s.M) {
	flag%[1]s.Parse()
	value := func(name string) string {
		if f := flag%[1]s.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	code, ok := codes%[1]s[value("test.run")]
	if !ok || value("test.skip") != "" || value("test.list") != "" || value("test.count") != "1" ||
		value("test.short") != "false" || value("test.paniconexit0") != "true" ||
		value("test.bench") != "" || value("test.fuzz") != "" || flag%[1]s.NArg() != 0 {
		os%[1]s.Stderr.WriteString("grader: the test flags were changed before the tests ran; nothing was graded\n")
		os%[1]s.Exit(1)
	}
	if m.Run() != 0 {
		os%[1]s.Exit(1)
	}
	os%[1]s.Exit(code)
}
`, id)
	return source{name: "zz_grader_main_" + id[:8] + "_test.go", data: []byte(b.String())}, nil
}

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
const buildUID = uidBase - 1

// builder compiles packages into test binaries in a temporary module.
type builder struct {
	course *Course
	goCmd  string
	limits BuildLimits
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
func (b *builder) build(ctx context.Context, pkg string, files []source, tests []string, studentFiles []string) (*buildResult, error) {
	work, err := os.MkdirTemp(tempBase(), "grader-")
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
	codes, err := randomCodes(tests)
	if err != nil {
		return fail(err)
	}
	main, err := mainFile(pkg, codes)
	if err != nil {
		return fail(err)
	}
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
			runErr = os.Chown(binPath, os.Geteuid(), os.Getegid())
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
	// Execute-only: the test process cannot read its own binary to look
	// for the exit codes.
	if err := os.Chmod(binPath, 0o111); err != nil {
		return fail(fmt.Errorf("grader: %w", err))
	}
	res.bin = &binary{path: binPath, codes: codes}
	return res, nil
}

// runGo runs the go command in dir for a build of untrusted code: under
// prlimit (address space and CPU time of each process), in its own process
// group (killed at the end and at the time limit), and when the grader is
// root as buildUID, which is given the folders in own. It returns the
// command's output, and an errBuildLimit when the build went past a limit.
func (b *builder) runGo(ctx context.Context, dir string, own []string, tmp string, args ...string) (string, error) {
	goPath, err := exec.LookPath(b.goCmd)
	if err != nil {
		return "", fmt.Errorf("grader: %w", err)
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		return "", errors.New("grader: prlimit not found; install util-linux (apt-get install util-linux)")
	}
	cpu := max(1, int(b.limits.Time/time.Second))
	argv := append([]string{prlimit, "--as=" + strconv.FormatInt(b.limits.Memory, 10), "--cpu=" + strconv.Itoa(cpu), "--core=0", "--", goPath}, args...)
	ctx, cancel := context.WithTimeout(ctx, b.limits.Time)
	defer cancel()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(buildEnv(), "GOTMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		cache, err := buildCache()
		if err != nil {
			return "", err
		}
		for _, d := range own {
			if err := chownTree(d, buildUID); err != nil {
				return "", fmt.Errorf("grader: %w", err)
			}
		}
		cmd.Env = append(cmd.Env, "GOCACHE="+cache)
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: buildUID, Gid: buildUID}
		cmd.SysProcAttr.AmbientCaps = []uintptr{capDACReadSearch}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("grader: starting go %s: %w", args[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var runErr error
	select {
	case runErr = <-done:
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		runErr = <-done
	}
	// What the build left running goes with its group.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	text := out.String()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return text, errBuildLimit{fmt.Sprintf("the compiler did not finish within %s", b.limits.Time)}
	case runErr != nil && overBuildLimit.MatchString(text) && !strings.Contains(text, "failed to reserve page summary memory"):
		// (The Go runtime itself needs about 600 MiB of address space
		// to start: below that, it is the limit that is wrong.)
		return text, errBuildLimit{fmt.Sprintf("the compiler went past its limits (%d MiB of memory per process, %s)", b.limits.Memory>>20, b.limits.Time)}
	}
	return text, runErr
}

// overBuildLimit matches what the go command prints when a compiler
// process ran out of its address space or CPU time.
var overBuildLimit = regexp.MustCompile(`out of memory|cannot allocate memory|signal: killed|CPU time limit exceeded|signal: cpu time|SIGXCPU`)

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
