//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"
)

// Off Linux (a student's Mac, or Windows without WSL2) there is no
// bubblewrap, no cgroup and no pool of uids: this file runs the student's
// own code for `grader check`, as the user, with the rlimits the OS has
// (process_unix.go; none on Windows), the wall-clock timeout, the output
// cap and, on Unix, a session of its own that is killed as one. Graded runs
// of others' code happen on Linux; grader/cmd/grader refuses grade, batch
// and verify here unless --sandbox none says that no sandbox is wanted.

// Sandbox runs test binaries. Its zero value is not usable; make one with
// New. It is safe for concurrent use.
type Sandbox struct {
	mode     Mode
	notices  io.Writer
	once     sync.Once
	warnOnce sync.Once
}

// New prepares the runner of this OS. Its notice (no sandbox here) goes to
// notices, once, when it first runs a test.
func New(mode Mode, notices io.Writer, hide ...string) (*Sandbox, error) {
	if notices == nil {
		notices = io.Discard
	}
	return &Sandbox{mode: mode, notices: notices}, nil
}

// Describe says in a few words how tests are isolated.
func (s *Sandbox) Describe() string {
	return "no sandbox (" + runtime.GOOS + "): " + osLimits + ", timeout"
}

// Namespaced reports whether tests run inside bubblewrap: never off Linux.
func (s *Sandbox) Namespaced() bool { return false }

// Usable reports an error when the sandbox mode asked for cannot run here.
func (s *Sandbox) Usable() error {
	if s.mode == ModeBwrap {
		return fmt.Errorf("sandbox: bubblewrap required (--sandbox bwrap) but it needs Linux; this is %s", runtime.GOOS)
	}
	return nil
}

// WarnReadable says, once, that the tests can read what the user can: the
// grader calls it before it grades others' code.
func (s *Sandbox) WarnReadable() {
	s.warnOnce.Do(func() {
		fmt.Fprintf(s.notices, "grader: notice: on %s the tests run as you, with no sandbox: they can read and change whatever you can, the course's hidden tests and solutions included\n", runtime.GOOS)
	})
}

// Leftovers needs Linux's pool of uids; off Linux there is none.
func Leftovers() (map[int]int, error) {
	return nil, errors.New("sandbox: Leftovers needs Linux (the pool of uids)")
}

// Run runs r and waits for it and, where the OS has process groups, the
// group it started.
func (s *Sandbox) Run(ctx context.Context, r Run) (Outcome, error) {
	if err := s.Usable(); err != nil {
		return Outcome{}, err
	}
	s.once.Do(func() {
		fmt.Fprintf(s.notices, "grader: notice: on %s tests run without a sandbox (%s and a timeout); graded runs happen on Linux\n", runtime.GOOS, osLimits)
	})
	private, err := os.MkdirTemp(TempBase(), "grader-run-")
	if err != nil {
		return Outcome{}, fmt.Errorf("sandbox: %w", err)
	}
	defer os.RemoveAll(private)
	extra := []string{"GPUKIT_SPIN=0"}
	if r.Limits.Serial {
		extra = append(extra, "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1")
	}
	cmd := limitedCommand(r.Binary, r.Args, r.Limits)
	cmd.Dir = private
	cmd.Env = append(baseEnv(private), extra...)
	pr, pw, err := os.Pipe()
	if err != nil {
		return Outcome{}, fmt.Errorf("sandbox: %w", err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	var secretR, secretW, reportR, reportW *os.File
	closeAll := func() {
		for _, f := range []*os.File{pr, pw, secretR, secretW, reportR, reportW} {
			if f != nil {
				f.Close()
			}
		}
	}
	if r.Secret != "" {
		if secretR, secretW, err = os.Pipe(); err == nil {
			reportR, reportW, err = os.Pipe()
		}
		if err == nil {
			err = passPipes(cmd, secretR, reportW)
		}
		if err != nil {
			closeAll()
			return Outcome{}, fmt.Errorf("sandbox: %w", err)
		}
	}
	var out Outcome
	start := time.Now()
	kill, release, err := startLimited(cmd, r.Limits)
	if err != nil {
		closeAll()
		return Outcome{}, fmt.Errorf("sandbox: starting the test process: %w", err)
	}
	defer release()
	// The child's ends.
	for _, f := range []*os.File{pw, secretR, reportW} {
		if f != nil {
			f.Close()
		}
	}
	if err := supervise(ctx, cmd, r, start, pr, secretW, reportR, kill, nil, &out); err != nil {
		if err == ctx.Err() {
			return Outcome{}, err
		}
		return out, err
	}
	return out, nil
}
