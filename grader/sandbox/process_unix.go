//go:build unix && !linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// osLimits says which rlimits a test gets here. RLIMIT_AS is left out
// (macOS does not enforce it) and so is RLIMIT_NPROC (it counts every
// process of the user, the student's desktop included).
const osLimits = "rlimits on CPU time, file size and core files"

// limitedCommand runs binary through the shell's ulimit (Go's os/exec sets
// no rlimits of a child, and the grader must not lower its own), in a
// session of its own that killProcess kills as one. ulimit -f counts
// 512-byte blocks in POSIX shells (macOS's /bin/sh, dash).
func limitedCommand(binary string, args []string, l Limits) *exec.Cmd {
	script := fmt.Sprintf(`ulimit -c 0; ulimit -t %d; ulimit -f %d; exec "$0" "$@"`,
		max(1, int(l.CPU/time.Second)), max(1, l.FileSize/512))
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, binary}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// baseEnv is the test's whole environment, but for the grader's extras.
func baseEnv(private string) []string {
	return []string{"HOME=" + private, "TMPDIR=" + private, "PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
}

// startLimited starts cmd; kill kills the test's session, which is its
// process group; release has nothing to release.
func startLimited(cmd *exec.Cmd, _ Limits) (kill, release func(), err error) {
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	kill = func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return kill, func() {}, nil
}

// passPipes hands the test the secret's pipe as fd 3 and the verdicts' as
// fd 4, as on Linux.
func passPipes(cmd *exec.Cmd, secretR, reportW *os.File) error {
	cmd.ExtraFiles = []*os.File{secretR, reportW}
	return nil
}
