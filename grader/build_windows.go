package grader

import (
	"os/exec"
	"strings"
	"syscall"

	"github.com/gpumem/course/grader/sandbox"
)

// inGroup gives cmd a process group of its own; Windows kills only the
// process itself (killGroup).
func inGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

func killGroup(cmd *exec.Cmd) { cmd.Process.Kill() }

func chownSelf(path string) error { return nil }

// sigXCPU is RLIMIT_CPU's signal, which Windows does not have: no test
// ends by it.
const sigXCPU = syscall.Signal(-1)

// pipeFiles makes the generated TestMain (mainFile) open the grader's pipes
// from the handles the sandbox names in its environment, since Windows has
// no fd 3 and 4 (sandbox/process_windows.go).
func pipeFiles(code, id string) string {
	code = strings.Replace(code, `NewFile(3, "secret")`, `NewFile(handle`+id+`("`+sandbox.SecretHandleVar+`"), "secret")`, 1)
	code = strings.Replace(code, `NewFile(4, "verdict")`, `NewFile(handle`+id+`("`+sandbox.ReportHandleVar+`"), "verdict")`, 1)
	return code + `
// handle` + id + ` is the handle the grader passed in the environment
// variable name, or 0.
func handle` + id + `(name string) uintptr {
	var h uintptr
	for _, c := range os` + id + `.Getenv(name) {
		if c < '0' || c > '9' {
			return 0
		}
		h = h*10 + uintptr(c-'0')
	}
	return h
}
`
}
