package main

import (
	"os/exec"
	"syscall"
)

// inGroup gives cmd a process group of its own; on Windows killGroup kills
// the process only, not what it started.
func inGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
