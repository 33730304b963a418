package sandbox

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// cgroupV1 returns the grader's cgroups on a cgroup v1 machine as root,
// or skips.
func cgroupV1(t *testing.T) *cgroups {
	t.Helper()
	c, err := findCgroups()
	if err != nil {
		t.Skipf("no usable cgroups: %v", err)
	}
	if c.v2 {
		t.Skip("cgroup v1 only: v2 moves whole processes, never a thread")
	}
	return c
}

// intoCgroup moves the calling thread (locked) into dir, a cgroup v1
// folder, and returns the function that moves it back to ctl's own cgroup.
func intoCgroup(t *testing.T, c *cgroups, ctl, dir string) (back func()) {
	t.Helper()
	runtime.LockOSThread()
	tid := []byte(strconv.Itoa(syscall.Gettid()))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tasks"), tid, 0))
	return func() {
		require.NoError(t, os.WriteFile(filepath.Join(c.own[ctl], "tasks"), tid, 0))
		runtime.UnlockOSThread()
	}
}

// TestKillCgroupSparesTheGrader: on cgroup v1 a thread of the grader
// stands in a test's cgroup while it starts the test, and cgroup.procs
// then lists the grader's own pid; emptying that cgroup (a stale one of
// the same name, or a test's at its end) must not kill the grader. On the
// old code this test's own process died of SIGKILL (CI saw "signal:
// killed" for the grader package).
func TestKillCgroupSparesTheGrader(t *testing.T) {
	c := cgroupV1(t)
	dir := filepath.Join(c.base["pids"], "self-"+strconv.Itoa(os.Getpid()))
	require.NoError(t, os.Mkdir(dir, 0o755))
	defer os.Remove(dir)
	back := intoCgroup(t, c, "pids", dir)
	killCgroup(dir)
	back()
}

// TestCgroupsFoundOnceOutsideTests: the grader's own cgroups are read once
// per process, so that a sandbox made while a thread stands in a test's
// cgroup does not take that cgroup for the grader's own (and nest its
// tests' cgroups inside it, as a CI run left behind).
func TestCgroupsFoundOnceOutsideTests(t *testing.T) {
	c := cgroupV1(t)
	dir := filepath.Join(c.base["pids"], "self-"+strconv.Itoa(os.Getpid()))
	require.NoError(t, os.Mkdir(dir, 0o755))
	defer os.Remove(dir)
	// The whole process (cgroup.procs), so that /proc/self/cgroup shows
	// the test's cgroup whichever thread reads it.
	pid := []byte(strconv.Itoa(os.Getpid()))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), pid, 0))
	back := func() { require.NoError(t, os.WriteFile(filepath.Join(c.own["pids"], "cgroup.procs"), pid, 0)) }
	again, err := findCgroups()
	back()
	nested := filepath.Join(dir, "gpumem-grader")
	defer os.Remove(nested) // before dir: defers run last in, first out
	require.NoError(t, err)
	require.Equal(t, c.base, again.base)
	require.NoDirExists(t, nested)
}

// TestNewTestRemovesStaleCgroups: a test's cgroup left by a grader that
// died, with cgroups nested in it, does not stop the next test of that uid
// ("mkdir ...: file exists" failed every later run on CI's machine).
func TestNewTestRemovesStaleCgroups(t *testing.T) {
	c := cgroupV1(t)
	uid := uidBase + uidCount - 1
	lock, err := openUIDLock(uid) // no other grader's test runs as uid meanwhile
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))
	for _, base := range c.base {
		stale := filepath.Join(base, "uid-"+strconv.Itoa(uid))
		require.NoError(t, os.MkdirAll(filepath.Join(stale, "gpumem-grader", "uid-"+strconv.Itoa(uid)), 0o755))
	}
	tc, err := c.newTest(uid, 64<<20, 16)
	require.NoError(t, err)
	tc.remove()
	for _, base := range c.base {
		require.NoDirExists(t, filepath.Join(base, "uid-"+strconv.Itoa(uid)))
	}
}
