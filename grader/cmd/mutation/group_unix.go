//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// inGroup starts cmd in a process group of its own, which killGroup kills
// with whatever it started.
func inGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func killGroup(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
