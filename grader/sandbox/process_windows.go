package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
)

// osLimits says which rlimits a test gets here: Windows has none.
const osLimits = "no rlimits (Windows has none)"

// Windows has no fd 3 and 4: the test finds the handles of the secret's
// and the verdicts' pipes in these environment variables (the grader's
// generated TestMain reads them; grader/mainfile_windows.go).
const (
	SecretHandleVar = "GRADER_SECRET_HANDLE"
	ReportHandleVar = "GRADER_REPORT_HANDLE"
)

// limitedCommand runs binary as it is: Windows has no rlimits. Only the
// test process is killed at the timeout, not what it started.
func limitedCommand(binary string, args []string, l Limits) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
	return cmd
}

// baseEnv is the test's whole environment, but for the grader's extras: Go
// programs on Windows need SystemRoot.
func baseEnv(private string) []string {
	root := os.Getenv("SystemRoot")
	return []string{"SystemRoot=" + root, "USERPROFILE=" + private, "TEMP=" + private, "TMP=" + private,
		"PATH=" + filepath.Join(root, "System32")}
}

func killProcess(cmd *exec.Cmd) {
	cmd.Process.Kill()
}

// passPipes lets the test inherit the two pipe handles, and only them, and
// names them in its environment.
func passPipes(cmd *exec.Cmd, secretR, reportW *os.File) error {
	handles := []syscall.Handle{syscall.Handle(secretR.Fd()), syscall.Handle(reportW.Fd())}
	for _, h := range handles {
		if err := syscall.SetHandleInformation(h, syscall.HANDLE_FLAG_INHERIT, syscall.HANDLE_FLAG_INHERIT); err != nil {
			return err
		}
	}
	cmd.SysProcAttr.AdditionalInheritedHandles = handles
	cmd.Env = append(cmd.Env, SecretHandleVar+"="+strconv.FormatUint(uint64(handles[0]), 10),
		ReportHandleVar+"="+strconv.FormatUint(uint64(handles[1]), 10))
	return nil
}
