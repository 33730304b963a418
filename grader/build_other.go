//go:build !linux

package grader

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"runtime"
)

// runGo runs the go command in dir for a build of the student's own code
// (off Linux, only `grader check` builds, unless --sandbox none): no
// prlimit and no build uid, but the time limit, and on Unix a process group
// of its own, killed at the end and at the time limit (build_unix.go).
// Linux's runGo is build_linux.go.
func (b *builder) runGo(ctx context.Context, dir string, own []string, tmp string, args ...string) (string, error) {
	goPath, err := exec.LookPath(b.goCmd)
	if err != nil {
		return "", fmt.Errorf("grader: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, b.limits.Time)
	defer cancel()
	cmd := exec.Command(goPath, args...)
	cmd.Dir = dir
	cmd.Env = append(buildEnv(), "GOTMPDIR="+tmp)
	inGroup(cmd)
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
		killGroup(cmd)
		runErr = <-done
	}
	killGroup(cmd)
	text := out.String()
	if ctx.Err() == context.DeadlineExceeded {
		return text, errBuildLimit{fmt.Sprintf("the compiler did not finish within %s", b.limits.Time)}
	}
	return text, runErr
}

// ownBinary gives the test binary to the grader's user (Windows has no
// owners to give).
func ownBinary(path string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	return chownSelf(path)
}
