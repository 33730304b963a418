//go:build unix && !linux

package grader

import (
	"os"
	"os/exec"
	"syscall"
)

// inGroup starts cmd in a process group of its own, which killGroup kills.
func inGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func killGroup(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

func chownSelf(path string) error { return os.Chown(path, os.Geteuid(), os.Getegid()) }

// sigXCPU is the signal of RLIMIT_CPU.
const sigXCPU = syscall.SIGXCPU
