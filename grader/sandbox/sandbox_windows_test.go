package sandbox

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// These tests run the test binary itself as the test process: with the
// argument "tree" it starts itself again as "sleeper" (a grandchild),
// prints the grandchild's process id and waits; "spin" burns CPU time.
// This machine has no Windows: make cross builds this binary and runs it
// under Wine where Wine is installed (scripts/cross.sh).

func TestMain(m *testing.M) {
	flag.Parse()
	switch flag.Arg(0) {
	case "tree":
		sleeper := exec.Command(os.Args[0], "-test.run=^$", "--", "sleeper")
		if err := sleeper.Start(); err != nil {
			fmt.Println("start:", err)
			os.Exit(3)
		}
		fmt.Printf("sleeper %d\n", sleeper.Process.Pid)
		time.Sleep(time.Minute)
		os.Exit(0)
	case "sleeper":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "spin":
		for end := time.Now().Add(time.Minute); time.Now().Before(end); {
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runSelf(t *testing.T, l Limits, args ...string) Outcome {
	t.Helper()
	s, err := New(ModeLimits, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Run(context.Background(), Run{Binary: os.Args[0], Args: append([]string{"-test.run=^$", "--"}, args...), Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// alive reports whether process pid still runs.
func alive(t *testing.T, pid int) bool {
	t.Helper()
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return false // gone (or its id not yet reused)
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 2000)
	return err == nil && ev == uint32(windows.WAIT_TIMEOUT)
}

// TestTimeoutKillsTheTree: at the timeout the test process and the
// process it started are both killed (the job object), and the output
// pipe, which the grandchild held too, closes at once.
func TestTimeoutKillsTheTree(t *testing.T) {
	out := runSelf(t, Limits{Wall: 3 * time.Second, Output: 1 << 16}, "tree")
	if !out.TimedOut {
		t.Fatalf("not timed out: %+v, output %q", out, out.Output)
	}
	line := strings.TrimSpace(string(out.Output))
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "sleeper "))
	if err != nil {
		t.Fatalf("output %q", out.Output)
	}
	if alive(t, pid) {
		t.Errorf("the grandchild %d outlived the timeout", pid)
	}
	if out.Elapsed > 5*time.Second {
		t.Errorf("took %v: the pipe stayed open", out.Elapsed)
	}
}

// underWine reports whether this runs under Wine, whose job objects kill
// their processes but do not enforce a CPU time limit (Wine 10).
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// TestCPULimit: a process past its CPU time is ended by the job well
// before the wall-clock timeout.
func TestCPULimit(t *testing.T) {
	if underWine() {
		t.Skip("Wine's job objects do not enforce a CPU time limit")
	}
	out := runSelf(t, Limits{Wall: 40 * time.Second, CPU: 2 * time.Second, Output: 1 << 16}, "spin")
	if out.TimedOut || out.ExitCode == 0 {
		t.Fatalf("the CPU limit did not end it: %+v", out)
	}
}
