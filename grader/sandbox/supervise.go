package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// supervise sees a started test process through to its end, the same on
// every OS. It writes r's secret to secretW, reads the process's output
// (pr) and report (reportR, when r has a secret) as they come, keeping
// what the limits allow, and calls kill (the process's group, and as root
// its uid) when the output floods, the wall-clock limit passes or ctx
// ends, and once more when the process has exited, for what it left
// running; then afterKill, when set. Descendants that keep a pipe open are
// waited for a few seconds, then cut off. out gets Output, Flooded,
// Report, TimedOut, Elapsed, ExitCode and Signal. It returns ctx.Err()
// when ctx ended first, an error when waiting failed, and nil when the
// process ran to its end, however it ended.
func supervise(ctx context.Context, cmd *exec.Cmd, r Run, start time.Time, pr, secretW, reportR *os.File, kill, afterKill func(), out *Outcome) error {
	reportDone := make(chan struct{})
	if r.Secret != "" {
		// 64 bytes never fill a pipe: this does not wait for the child.
		secretW.WriteString(r.Secret)
		secretW.Close()
		go func() {
			defer close(reportDone)
			out.Report, _ = readCapped(reportR, maxReport, nil)
			io.Copy(io.Discard, reportR)
		}()
	} else {
		close(reportDone)
	}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		out.Output, out.Flooded = readCapped(pr, r.Limits.Output, r.Output)
		if out.Flooded {
			kill()
		}
		io.Copy(io.Discard, pr) // until every writer is gone
		pr.Close()
	}()
	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()
	timer := time.NewTimer(r.Limits.Wall)
	defer timer.Stop()
	var waitErr error
	select {
	case waitErr = <-waitDone:
	case <-timer.C:
		out.TimedOut = true
		kill()
		waitErr = <-waitDone
	case <-ctx.Done():
		kill()
		<-waitDone
		pr.Close()
		<-readDone
		if reportR != nil {
			reportR.Close()
		}
		<-reportDone
		return ctx.Err()
	}
	out.Elapsed = time.Since(start)
	// Children that outlived the test (background processes, a fork
	// bomb) go too.
	kill()
	if afterKill != nil {
		afterKill()
	}
	select {
	case <-readDone:
	case <-time.After(5 * time.Second):
		// A descendant that left the group keeps the pipe open: close our
		// end and go on.
		pr.Close()
		<-readDone
	}
	if reportR != nil {
		select {
		case <-reportDone:
		case <-time.After(time.Second):
		}
		reportR.Close()
		<-reportDone
	}
	out.ExitCode = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		out.Signal = ws.Signal()
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return fmt.Errorf("sandbox: waiting for the test process: %w", waitErr)
	}
	return nil
}
