package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// osLimits says what limits a test gets here: Windows has no rlimits, but
// a job object limits the processes in it.
const osLimits = "a job object: CPU time, memory and processes limited, every process it starts killed with it"

// Windows has no fd 3 and 4: the test finds the handles of the secret's
// and the verdicts' pipes in these environment variables (the grader's
// generated TestMain reads them; grader/mainfile_windows.go).
const (
	SecretHandleVar = "GRADER_SECRET_HANDLE"
	ReportHandleVar = "GRADER_REPORT_HANDLE"
)

// limitedCommand runs binary as it is; startLimited puts it in a job.
func limitedCommand(binary string, args []string, l Limits) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
	return cmd
}

// startLimited starts cmd and puts it in a job object of its own, which
// every process it starts joins (Windows's rlimits and process group in
// one): CPU time per process (l.CPU), committed memory per process
// (l.AddressSpace), at most l.Procs processes at once; kill terminates
// every process of the job, also after the test process has exited, and
// release closes the job, which kills what is left
// (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE). The process runs a few
// instructions before it joins; a Go test binary starts nothing that
// soon.
func startLimited(cmd *exec.Cmd, l Limits) (kill, release func(), err error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("creating a job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	basic := &info.BasicLimitInformation
	basic.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if l.CPU > 0 {
		basic.LimitFlags |= windows.JOB_OBJECT_LIMIT_PROCESS_TIME
		basic.PerProcessUserTimeLimit = l.CPU.Nanoseconds() / 100 // in 100 ns
	}
	if l.AddressSpace > 0 {
		basic.LimitFlags |= windows.JOB_OBJECT_LIMIT_PROCESS_MEMORY
		info.ProcessMemoryLimit = uintptr(l.AddressSpace)
	}
	if l.Procs > 0 {
		basic.LimitFlags |= windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
		basic.ActiveProcessLimit = uint32(l.Procs)
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil, nil, fmt.Errorf("limiting the job object: %w", err)
	}
	if err := cmd.Start(); err != nil {
		windows.CloseHandle(job)
		return nil, nil, err
	}
	proc, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err == nil {
		err = windows.AssignProcessToJobObject(job, proc)
		windows.CloseHandle(proc)
	}
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		windows.CloseHandle(job)
		return nil, nil, fmt.Errorf("putting the test process in its job object: %w", err)
	}
	kill = func() { windows.TerminateJobObject(job, 1) }
	release = func() { windows.CloseHandle(job) }
	return kill, release, nil
}

// baseEnv is the test's whole environment, but for the grader's extras: Go
// programs on Windows need SystemRoot.
func baseEnv(private string) []string {
	root := os.Getenv("SystemRoot")
	return []string{"SystemRoot=" + root, "USERPROFILE=" + private, "TEMP=" + private, "TMP=" + private,
		"PATH=" + filepath.Join(root, "System32")}
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
