package grader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

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
	// No file of the build may pass buildFileSize: a 512 MiB array
	// constant compiles to a 512 MiB archive, which the build cache would
	// keep after every grading (the prefix of the hidden names makes each
	// grading's package new).
	argv := append([]string{prlimit, "--as=" + strconv.FormatInt(b.limits.Memory, 10), "--cpu=" + strconv.Itoa(cpu),
		"--fsize=" + strconv.FormatInt(buildFileSize, 10), "--core=0", "--", goPath}, args...)
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
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("grader: starting go %s: %w", args[0], err)
	}
	if os.Geteuid() == 0 {
		// What this build put in the grader's cache beyond
		// bigCacheEntry is the submission's own (no package of the
		// course comes near it): never used again, it goes.
		defer func() {
			if cache, err := buildCache(); err == nil {
				removeNewCacheEntries(cache, started.Add(-time.Second))
			}
		}()
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
		return text, errBuildLimit{fmt.Sprintf("the compiler went past its limits (%d MiB of memory per process, files of %d MiB, %s)", b.limits.Memory>>20, buildFileSize>>20, b.limits.Time)}
	}
	return text, runErr
}

// ownBinary gives the test binary, which the build's uid wrote, to the
// grader.
func ownBinary(path string) error { return os.Chown(path, os.Geteuid(), os.Getegid()) }

// sigXCPU is the signal of RLIMIT_CPU.
const sigXCPU = syscall.SIGXCPU
