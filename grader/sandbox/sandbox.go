package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// This file is what every OS shares: the modes, limits and outcomes, and
// the helpers that need no OS. The sandbox itself is sandbox_linux.go (with
// cgroup_linux.go); sandbox_other.go is the plain runner of a student's
// own machine elsewhere.

// Mode says how test processes are isolated.
type Mode int

const (
	// ModeAuto uses bubblewrap when it works here and Limits otherwise,
	// saying so once.
	ModeAuto Mode = iota
	// ModeBwrap requires bubblewrap.
	ModeBwrap
	// ModeLimits uses rlimits, the timeout and, as root, a separate
	// uid, without namespaces.
	ModeLimits
)

// ParseMode reads "auto", "bwrap", "limits" or "none", which is limits: the
// flag's word for running without bubblewrap where there is none (off
// Linux, the grader's command asks for it to be said).
func ParseMode(s string) (Mode, error) {
	switch s {
	case "auto", "":
		return ModeAuto, nil
	case "bwrap":
		return ModeBwrap, nil
	case "limits", "none":
		return ModeLimits, nil
	}
	return 0, fmt.Errorf("sandbox: sandbox %q is not auto, bwrap or limits", s)
}

// Limits bound one test process.
type Limits struct {
	Test         time.Duration // the test's own timeout (-test.timeout), which reports where it was stuck
	Wall         time.Duration // killed after this long
	CPU          time.Duration // RLIMIT_CPU
	AddressSpace int64         // RLIMIT_AS, bytes
	Procs        int           // RLIMIT_NPROC, beyond what the uid runs already
	FileSize     int64         // RLIMIT_FSIZE, bytes; also the size of the private tmpfs
	Output       int64         // bytes of output kept; a process printing more is killed
	// Serial runs the test's goroutines one at a time, switching only
	// where they call a function (GOMAXPROCS=1, no asynchronous
	// preemption): a data race can then not tear a multi-word value (an
	// interface, a slice) into one that points at memory the code was
	// not handed.
	Serial bool
}

// uidBase is the first of the uids that tests run as when the grader runs
// as root: a range that no distribution allocates, one uid per concurrent
// test, so a leftover process can be found and killed by its uid.
// (Graders that kept their locks in /tmp used 0x70000000 on: the two never
// share a uid.)
const (
	uidBase  = 0x70010000
	uidCount = 64
)

// BuildUID is the uid that compiles submissions when the grader runs as
// root: just below the tests' range, never one of theirs.
const BuildUID = uidBase - 1

// Run is one process to run: a binary, alone in its folder, with its
// arguments and limits.
type Run struct {
	Binary string
	Args   []string
	Limits Limits
	// Output receives what the process prints, as it comes, up to
	// Limits.Output bytes; when nil, Outcome.Output keeps it.
	Output io.Writer
	// Secret, when set, is written to a pipe the process reads as fd 3,
	// and what it writes to fd 4 (up to maxReport bytes) comes back as
	// Outcome.Report: the grader's per-run secret and the tests' verdicts.
	Secret string
}

// maxReport bounds what a test process may report on fd 4.
const maxReport = 4 << 10

// Outcome is what a process did.
type Outcome struct {
	ExitCode  int // -1 when killed by a signal
	Signal    syscall.Signal
	TimedOut  bool
	Flooded   bool // printed more than Limits.Output
	OOMKilled bool // a process was killed for the memory of the test as a whole
	Output    []byte
	Report    []byte // what the process wrote to fd 4 (Run.Secret)
	Elapsed   time.Duration
}

// TempBase is the folder for the grader's temporary folders: the system's,
// unless the grader runs as root and some folder on that path is closed to
// other users (the tests' uids must reach their binary), then /tmp.
func TempBase() string {
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

// readCapped copies r to w until EOF or limit bytes, and says whether
// there was more; when w is nil, it returns what it read.
func readCapped(r io.Reader, limit int64, w io.Writer) ([]byte, bool) {
	var buf *bytes.Buffer
	if w == nil {
		buf = &bytes.Buffer{}
		w = buf
	}
	n, _ := io.Copy(w, io.LimitReader(r, limit+1))
	if buf == nil {
		return nil, n > limit
	}
	if n > limit {
		return buf.Bytes()[:limit], true
	}
	return buf.Bytes(), false
}

func isUnder(path string, roots ...string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, r+"/") {
			return true
		}
	}
	return false
}
