package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A pool uid can still be charged for tasks when its turn comes: zombies
// that a lazy init has not reaped yet (on some machines init reaps orphans
// only now and then), or what a grader that died left running. RLIMIT_NPROC
// counts all of them, so a test on that uid must still get its full budget
// of processes, and live leftovers must be gone before it starts.
func TestSandboxUIDWithLeftovers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the pool of uids is used only by a grader running as root")
	}
	for _, mode := range []Mode{ModeAuto, ModeLimits} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			s, err := New(mode, nil)
			require.NoError(t, err)
			uid, release, err := s.acquireUID(context.Background())
			require.NoError(t, err)
			// The sandbox gets only this uid: release hands it back into
			// a pool of one, where the test's run must take it.
			s.uids = make(chan int, 1)

			const zombies = 300
			var children []*exec.Cmd
			t.Cleanup(func() {
				for _, c := range children {
					c.Process.Kill()
					c.Wait()
				}
			})
			for range zombies {
				c := exec.Command("/bin/true")
				c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
				require.NoError(t, c.Start())
				children = append(children, c) // not waited for: a zombie until Cleanup
			}
			live := exec.Command("/bin/sleep", "600")
			live.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
			require.NoError(t, live.Start())
			children = append(children, live)
			require.Eventually(t, func() bool { return liveTasks(uid) == 1 }, 10*time.Second, 10*time.Millisecond)
			// At least these; an earlier run's zombies may still be there
			// too, until init gets round to them.
			assert.GreaterOrEqual(t, chargedTasks(uid), zombies+1)
			release()

			// The test forks a handful of processes and waits for them.
			dir, err := os.MkdirTemp("", "grader-sandbox-test-")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(dir) })
			require.NoError(t, os.Chmod(dir, 0o755)) // the uid must reach the script
			script := filepath.Join(dir, "forks")
			require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8; do /bin/sleep 0.01 & done\nwait && echo forked\n"), 0o755))
			out, err := s.Run(context.Background(), Run{Binary: script, Limits: Limits{
				Test: 10 * time.Second, Wall: 10 * time.Second, CPU: 10 * time.Second,
				AddressSpace: 1 << 30, Procs: 16, FileSize: 1 << 20, Output: 1 << 16,
			}})
			require.NoError(t, err)
			assert.Equal(t, 0, out.ExitCode, "%s", out.Output)
			assert.Equal(t, "forked", strings.TrimSpace(string(out.Output)))
			// The sleeping leftover was killed when the uid was taken.
			assert.Zero(t, liveTasks(uid))
		})
	}
}

func TestParseStatus(t *testing.T) {
	const head = "Name:\tsleep\nUmask:\t0022\n"
	for _, c := range []struct {
		name, text   string
		uid, threads int
		zombie       bool
	}{
		{"sleeping", head + "State:\tS (sleeping)\nTgid:\t42\nUid:\t1000\t1001\t1002\t1003\nGid:\t5\t5\t5\t5\nThreads:\t7\n", 1000, 7, false},
		{"zombie", head + "State:\tZ (zombie)\nUid:\t64000\t64000\t64000\t64000\nThreads:\t1\n", 64000, 1, true},
		{"dead", "State:\tX (dead)\nUid:\t0\t0\t0\t0\n", 0, 1, true},
		{"no final newline", "Uid:\t7\t7\t7\t7\nThreads:\t3", 7, 3, false},
		{"no uid, no threads", head, -1, 1, false},
		{"empty", "", -1, 1, false},
		{"a line that only starts like one", "Uidx:\t5\nThreadsx:\t9\nUid:\t12\t0\t0\t0\n", 12, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			uid, threads, zombie := parseStatus([]byte(c.text))
			assert.Equal(t, c.uid, uid, "uid")
			assert.Equal(t, c.threads, threads, "threads")
			assert.Equal(t, c.zombie, zombie, "zombie")
		})
	}
}

// procUIDs finds this process, its uid and at least its threads' count
// when procUIDs began (the runtime may start more, never fewer).
func TestProcUIDsFindsThisProcess(t *testing.T) {
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	found := 0
	procUIDs(func(pid, uid, threads int, zombie bool) {
		if pid == os.Getpid() {
			found++
			assert.Equal(t, os.Getuid(), uid)
			assert.GreaterOrEqual(t, threads, len(tasks))
			assert.False(t, zombie)
		}
	})
	assert.Equal(t, 1, found)
}

func BenchmarkProcUIDs(b *testing.B) {
	for b.Loop() {
		procUIDs(func(int, int, int, bool) {})
	}
}

// liveTasks counts the tasks (threads) that uid runs now.
func liveTasks(uid int) int {
	n := 0
	procUIDs(func(_, u, threads int, zombie bool) {
		if u == uid && !zombie {
			n += threads
		}
	})
	return n
}

// A secret in the grader's environment reaches no test: not through its
// own environment, nor through /proc (in bubblewrap /proc/1 is bwrap,
// which the grader starts).
func TestSandboxEnvironment(t *testing.T) {
	t.Setenv("GRADER_SECRET_TOKEN", "tok-4f9c1d")
	modes := []Mode{ModeAuto}
	if os.Geteuid() == 0 {
		// Without namespaces only a separate uid keeps /proc/PID/environ
		// of the grader closed.
		modes = append(modes, ModeLimits)
	}
	for _, mode := range modes {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			s, err := New(mode, nil)
			require.NoError(t, err)
			dir, err := os.MkdirTemp("", "grader-sandbox-test-")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(dir) })
			require.NoError(t, os.Chmod(dir, 0o755)) // the uid must reach the script
			script := filepath.Join(dir, "env")
			require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nenv\nfor f in /proc/[0-9]*/environ; do cat $f; done 2>/dev/null\necho done\n"), 0o755))
			out, err := s.Run(context.Background(), Run{Binary: script, Limits: Limits{
				Test: 10 * time.Second, Wall: 10 * time.Second, CPU: 10 * time.Second,
				AddressSpace: 1 << 30, Procs: 16, FileSize: 1 << 20, Output: 1 << 20, Serial: true,
			}})
			require.NoError(t, err)
			assert.Contains(t, string(out.Output), "GOMAXPROCS=1")
			assert.Contains(t, string(out.Output), "GPUKIT_SPIN=0")
			assert.Contains(t, string(out.Output), "done")
			assert.NotContains(t, string(out.Output), "tok-4f9c1d")
		})
	}
}

// The pool's lock files live in a folder of root's that nobody else can
// prepare: what a student plants where they used to be (/tmp) is ignored,
// and a lock folder that is not root's and closed, or a symlink, is
// refused rather than followed.
func TestSandboxLockFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the pool of uids is used only by a grader running as root")
	}
	// A student's plants at the old place: symlinks to a folder, and
	// files held locked by another process.
	target := t.TempDir()
	var held []*os.File
	for i := range uidCount {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("grader-uid-%d.lock", uidBase+i))
		if _, err := os.Lstat(path); err == nil {
			continue // a real grader's of before: leave it
		}
		if i%2 == 0 {
			require.NoError(t, os.Symlink(target, path))
			t.Cleanup(func() { os.Remove(path) })
			continue
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
		require.NoError(t, err)
		t.Cleanup(func() { os.Remove(path) })
		held = append(held, f)
		require.NoError(t, exec.Command("flock", "-n", path, "true").Run()) // free now
		require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	}
	t.Cleanup(func() {
		for _, f := range held {
			f.Close()
		}
	})
	s, err := New(ModeLimits, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := s.Run(ctx, Run{Binary: "/bin/true", Limits: Limits{
		Test: 10 * time.Second, Wall: 10 * time.Second, CPU: 10 * time.Second,
		AddressSpace: 1 << 30, Procs: 16, FileSize: 1 << 20, Output: 1 << 16,
	}})
	require.NoError(t, err, "a student's plants in /tmp stopped the grader")
	assert.Zero(t, out.ExitCode)
	entries, err := os.ReadDir(target)
	require.NoError(t, err)
	assert.Empty(t, entries, "root created files through a planted symlink")

	// The lock folder itself: a symlink, or a folder open to others, is
	// refused.
	saved := lockDir
	t.Cleanup(func() { lockDir = saved })
	dir := t.TempDir()
	lockDir = filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(target, lockDir))
	_, err = openUIDLock(uidBase)
	assert.Error(t, err)
	lockDir = filepath.Join(dir, "open")
	require.NoError(t, os.Mkdir(lockDir, 0o777))
	require.NoError(t, os.Chmod(lockDir, 0o777))
	_, err = openUIDLock(uidBase)
	assert.ErrorContains(t, err, "closed to others")
	// A symlink planted inside is not followed.
	require.NoError(t, os.Chmod(lockDir, 0o700))
	require.NoError(t, os.Symlink(filepath.Join(target, "made"), filepath.Join(lockDir, fmt.Sprintf("uid-%d.lock", uidBase))))
	_, err = openUIDLock(uidBase)
	assert.Error(t, err)
	assert.NoFileExists(t, filepath.Join(target, "made"))
}

// Without namespaces a test sees every process in /proc, with its command
// line: another test's binary must still be out of its reach.
func TestSandboxOtherTestsBinary(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: tests run as separate uids only when the grader is root")
	}
	s, err := New(ModeLimits, nil)
	require.NoError(t, err)
	dir, err := os.MkdirTemp("", "grader-sandbox-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	victim := filepath.Join(dir, "victim-7d1e")
	require.NoError(t, os.WriteFile(victim, []byte("#!/bin/sh\necho ran as $(id -u)\n/bin/sleep 3\n"), 0o755))
	thief := filepath.Join(dir, "thief")
	require.NoError(t, os.WriteFile(thief, []byte(`#!/bin/sh
for i in $(seq 1 40); do
	f=$(grep -l 'victim-7d1[e]' /proc/[0-9]*/cmdline 2>/dev/null | head -1)
	if [ -n "$f" ]; then
		p=$(tr '\0' '\n' < $f | grep 'victim-7d1[e]' | head -1)
		echo "found $p"
		"$p"
		exit 0
	fi
	sleep 0.05
done
echo "not found"
`), 0o755))
	limits := Limits{Test: 10 * time.Second, Wall: 10 * time.Second, CPU: 10 * time.Second,
		AddressSpace: 1 << 30, Procs: 16, FileSize: 1 << 20, Output: 1 << 16}
	done := make(chan Outcome, 1)
	go func() {
		out, _ := s.Run(context.Background(), Run{Binary: victim, Limits: limits})
		done <- out
	}()
	out, err := s.Run(context.Background(), Run{Binary: thief, Limits: limits})
	require.NoError(t, err)
	assert.Contains(t, string(out.Output), "found", "the thief did not see the victim: the test proves nothing")
	assert.NotContains(t, string(out.Output), "ran as", "a test ran another test's binary")
	v := <-done
	assert.Contains(t, string(v.Output), "ran as")
}

// In bubblewrap every tmpfs is sized and only /tmp and /dev/shm are
// writable: tmpfs pages are memory that no rlimit counts.
func TestSandboxTmpfsSized(t *testing.T) {
	s, err := New(ModeAuto, nil)
	require.NoError(t, err)
	if !s.Namespaced() {
		t.Skip("bubblewrap cannot run here")
	}
	dir, err := os.MkdirTemp("", "grader-sandbox-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	script := filepath.Join(dir, "fill")
	// Files of 4 MiB each (under the file size limit), until one fails.
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
for d in / /dev /dev/shm /tmp /grader; do
	n=0
	while [ $n -lt 8 ] && head -c 4194304 /dev/zero 2>/dev/null > $d/fill-$n; do n=$((n+1)); done
	echo "$d $n"
done
`), 0o755))
	out, err := s.Run(context.Background(), Run{Binary: script, Limits: Limits{
		Test: 20 * time.Second, Wall: 20 * time.Second, CPU: 20 * time.Second,
		AddressSpace: 1 << 30, Procs: 16, FileSize: 8 << 20, Output: 1 << 16,
	}})
	require.NoError(t, err)
	files := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out.Output)), "\n") {
		var d string
		var n int
		if _, err := fmt.Sscan(line, &d, &n); err == nil {
			files[d] = n
		}
	}
	assert.Equal(t, map[string]int{"/": 0, "/dev": 0, "/dev/shm": shmSize / (4 << 20), "/tmp": 2, "/grader": 0}, files, "%s", out.Output)
}

// Memory is limited for a test as a whole where cgroups can be used:
// children that each stay under the address-space limit but together go
// past it are killed. (Elsewhere only each process is limited: the
// README says so.)
func TestSandboxCgroupMemory(t *testing.T) {
	s, err := New(ModeLimits, nil)
	require.NoError(t, err)
	if s.cgroups == nil {
		t.Skipf("no cgroups here: %v", s.cgroupErr)
	}
	python := "/usr/bin/python3" // the system's: root's own may live where the test's uid cannot go
	if _, err := os.Stat(python); err != nil {
		t.Skip("needs /usr/bin/python3")
	}
	dir, err := os.MkdirTemp("", "grader-sandbox-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	script := filepath.Join(dir, "hogs")
	// Four children of 200 MiB each against 512 MiB for the test. The
	// parent waits until each child has its memory or is dead, however
	// slowly a loaded machine starts them (a CI run once saw them not
	// overlap within 2 s), then says which still hold theirs: at most two
	// fit.
	require.NoError(t, os.WriteFile(script, []byte(`#!`+python+`
import subprocess, sys
child = "import sys; b = b'a' * (200 << 20); sys.stdout.write('r'); sys.stdout.flush(); sys.stdin.read()"
kids = [subprocess.Popen([sys.executable, "-c", child], stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(4)]
ready = [k for k in kids if k.stdout.read(1) == b"r"]
for k in ready:
    if k.poll() is None:
        print("held", flush=True)
for k in kids:
    k.kill()
    k.wait()
`), 0o755))
	start := time.Now()
	out, err := s.Run(context.Background(), Run{Binary: script, Limits: Limits{
		Test: 60 * time.Second, Wall: 60 * time.Second, CPU: 60 * time.Second,
		AddressSpace: 512 << 20, Procs: 32, FileSize: 1 << 20, Output: 1 << 16,
	}})
	require.NoError(t, err)
	held := strings.Count(string(out.Output), "held")
	assert.Less(t, held, 4, "four children held 800 MiB against 512 MiB: %s", out.Output)
	assert.True(t, out.OOMKilled, "no child was killed for the test's memory in %s: %+v", time.Since(start), out)
	// A test within the limit is not disturbed.
	one := filepath.Join(dir, "one")
	require.NoError(t, os.WriteFile(one, []byte("#!/bin/sh\n"+python+" -c \"b = b'a' * (100 << 20); print('held')\"\n"), 0o755))
	out, err = s.Run(context.Background(), Run{Binary: one, Limits: Limits{
		Test: 20 * time.Second, Wall: 20 * time.Second, CPU: 20 * time.Second,
		AddressSpace: 512 << 20, Procs: 32, FileSize: 1 << 20, Output: 1 << 16,
	}})
	require.NoError(t, err)
	assert.Contains(t, string(out.Output), "held")
	assert.False(t, out.OOMKilled)
}

// A test's processes together get one CPU: busy shells started by a test
// (in sessions of their own, out of its process group) share its cgroup's
// quota instead of taking a classmate's cores. The test reads its own
// cgroup's quota, as the kernel applies it. (Whether the shells were
// throttled depends on what else the machine runs: not tested.)
func TestSandboxCPUShare(t *testing.T) {
	s, err := New(ModeLimits, nil)
	require.NoError(t, err)
	if s.cgroups == nil {
		t.Skipf("no cgroups here: %v", s.cgroupErr)
	}
	if _, ok := s.cgroups.base["cpu"]; !ok && !s.cgroups.v2 {
		t.Skip("no cpu controller here")
	}
	dir, err := os.MkdirTemp("", "grader-sandbox-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	script := filepath.Join(dir, "quota")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
setsid sh -c 'while :; do :; done' &
path=$(grep -E '^[0-9]+:([a-z,]*,)?cpu(,[a-z,]*)?:' /proc/self/cgroup | cut -d: -f3)
if [ -n "$path" ]; then
	echo "quota $(cat /sys/fs/cgroup/cpu$path/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu$path/cpu.cfs_period_us)"
else
	echo "quota $(cat /sys/fs/cgroup$(grep '^0::' /proc/self/cgroup | cut -d: -f3)/cpu.max)"
fi
`), 0o755))
	out, err := s.Run(context.Background(), Run{Binary: script, Limits: Limits{
		Test: 20 * time.Second, Wall: 20 * time.Second, CPU: 20 * time.Second,
		AddressSpace: 512 << 20, Procs: 32, FileSize: 1 << 20, Output: 1 << 16,
	}})
	require.NoError(t, err)
	assert.Contains(t, string(out.Output), "quota 100000 100000\n", "one CPU for the test's processes together")
}

// Without bubblewrap, as root, a test's uid reads what every user may: the
// grader says so when the course is one of those folders.
func TestSandboxWarnsReadableCourse(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("tests run as the grader's own user when it is not root")
	}
	open, closed := t.TempDir(), t.TempDir()
	require.NoError(t, os.Chmod(open, 0o755))
	require.NoError(t, os.Chmod(closed, 0o700))
	var notices strings.Builder
	s, err := New(ModeLimits, &notices, open, closed)
	require.NoError(t, err)
	s.WarnReadable()
	s.WarnReadable()
	if !othersCanRead(filepath.Dir(open)) {
		t.Skipf("%s is closed to others", filepath.Dir(open))
	}
	assert.Equal(t, 1, strings.Count(notices.String(), "is readable by every user"), notices.String())
	assert.Contains(t, notices.String(), open)
	assert.NotContains(t, notices.String(), closed)
}
