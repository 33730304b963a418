package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Sandbox runs test binaries. Its zero value is not usable; make one with
// New. It is safe for concurrent use.
type Sandbox struct {
	mode    Mode
	notices io.Writer
	prlimit string
	hide    []string // host folders never mounted into the sandbox

	once     sync.Once
	warnOnce sync.Once
	bwrap    string // path of a working bwrap, "" when not used
	probeErr error

	uids chan int // dedicated uids for tests when the grader is root

	cgroups   *cgroups // per-test limits when root and cgroups can be written
	cgroupErr error    // why not
}

// New prepares a sandbox. Notices (bubblewrap not usable) go to
// notices, once. hide lists host folders (the course, the build cache) that
// must never be visible to a test.
func New(mode Mode, notices io.Writer, hide ...string) (*Sandbox, error) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		return nil, errors.New("sandbox: prlimit not found; install util-linux (apt-get install util-linux)")
	}
	if notices == nil {
		notices = io.Discard
	}
	s := &Sandbox{mode: mode, notices: notices, prlimit: prlimit, hide: hide}
	if os.Geteuid() == 0 {
		s.cgroups, s.cgroupErr = findCgroups()
		s.uids = make(chan int, uidCount)
		for i := range uidCount {
			s.uids <- uidBase + i
		}
	}
	return s, nil
}

// Describe says in a few words how tests are isolated.
func (s *Sandbox) Describe() string {
	s.probe()
	var parts []string
	if s.bwrap != "" {
		parts = append(parts, "bubblewrap (no network, read-only system, private /tmp, own PID namespace)")
	} else {
		parts = append(parts, "no namespace sandbox")
	}
	parts = append(parts, "rlimits", "timeout")
	if s.uids != nil {
		parts = append(parts, "unprivileged uid")
	}
	if s.cgroups != nil {
		parts = append(parts, "a cgroup per test (memory and processes of all its processes together)")
	}
	return strings.Join(parts, ", ")
}

// probe finds out once whether bubblewrap works here.
func (s *Sandbox) probe() {
	s.once.Do(func() {
		if s.mode == ModeLimits {
			return
		}
		path, err := exec.LookPath("bwrap")
		if err == nil {
			cmd := exec.Command(path, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true")
			if s.uids != nil {
				uid, release, uerr := s.acquireUID(context.Background())
				if uerr != nil {
					s.probeErr = uerr
					return
				}
				defer release()
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
			}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err = cmd.Run(); err != nil {
				err = fmt.Errorf("%v: %s", err, strings.TrimSpace(out.String()))
			}
		}
		if err == nil {
			s.bwrap = path
			return
		}
		s.probeErr = err
		if s.mode == ModeAuto {
			fmt.Fprintf(s.notices, "grader: notice: bubblewrap cannot run here (%v); tests run without a namespace sandbox, with rlimits, a timeout%s. Install Debian's bubblewrap and allow user namespaces for the full sandbox.\n",
				err, map[bool]string{true: " and an unprivileged uid", false: ""}[s.uids != nil])
		}
	})
}

// Namespaced reports whether tests run inside bubblewrap.
func (s *Sandbox) Namespaced() bool {
	s.probe()
	return s.bwrap != ""
}

// Usable reports an error when the sandbox mode asked for cannot run here.
func (s *Sandbox) Usable() error {
	s.probe()
	if s.mode == ModeBwrap && s.bwrap == "" {
		return fmt.Errorf("sandbox: bubblewrap required (--sandbox bwrap) but it cannot run: %v", s.probeErr)
	}
	return nil
}

// shmSize is the size of /dev/shm in bubblewrap: the course uses no
// shared memory.
const shmSize = 4 << 20

// Run runs r and waits for it, its children and the grader's clean-up.
func (s *Sandbox) Run(ctx context.Context, r Run) (Outcome, error) {
	s.probe()
	if s.mode == ModeBwrap && s.bwrap == "" {
		return Outcome{}, s.Usable()
	}
	uid := -1
	if s.uids != nil {
		var release func()
		var err error
		if uid, release, err = s.acquireUID(ctx); err != nil {
			return Outcome{}, err
		}
		defer release()
	}
	// The test runs its binary from a private folder (0700, its uid's)
	// that holds a link to it: no other test, finding the path in
	// /proc/PID/cmdline, can run it. Without bubblewrap the test works in
	// that folder too (with it, in a private tmpfs).
	private, err := os.MkdirTemp(TempBase(), "grader-run-")
	if err != nil {
		return Outcome{}, fmt.Errorf("sandbox: %w", err)
	}
	defer os.RemoveAll(private)
	if uid >= 0 {
		if err := os.Chown(private, uid, uid); err != nil {
			return Outcome{}, fmt.Errorf("sandbox: %w", err)
		}
	}
	binary := filepath.Join(private, filepath.Base(r.Binary))
	if err := os.Link(r.Binary, binary); err != nil {
		return Outcome{}, fmt.Errorf("sandbox: %w", err)
	}

	// RLIMIT_NPROC counts every task of the real uid, zombies included
	// until they are reaped, and is checked at every level of nested user
	// namespaces: leave room for what the uid holds already (this user's
	// own processes, or a pool uid's dead tasks that a lazy init has not
	// reaped yet).
	owner := uid // the uid the test runs as
	if owner < 0 {
		owner = os.Getuid()
	}
	procs := r.Limits.Procs + chargedTasks(owner)
	argv := []string{s.prlimit,
		"--cpu=" + strconv.Itoa(int(r.Limits.CPU/time.Second)),
		"--as=" + strconv.FormatInt(r.Limits.AddressSpace, 10),
		"--nproc=" + strconv.Itoa(procs),
		"--fsize=" + strconv.FormatInt(r.Limits.FileSize, 10),
		"--core=0",
		"--"}
	dir := private
	// The test sees this environment and nothing of the grader's: not
	// even bwrap, whose own environment a test could read in
	// /proc/1/environ, gets more.
	// gpukit's kernel helpers do not wait awake for more work (they would
	// spend the test's CPU time while other tests run beside it).
	extra := []string{"GPUKIT_SPIN=0"}
	if r.Limits.Serial {
		extra = append(extra, "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1")
	}
	env := append([]string{"HOME=" + private, "TMPDIR=" + private, "PATH=/usr/bin:/bin", "LANG=C.UTF-8"}, extra...)
	if s.bwrap != "" {
		argv = append(argv, s.bwrap, "--unshare-all", "--die-with-parent", "--new-session",
			"--uid", "65534", "--gid", "65534", "--hostname", "grader")
		for _, d := range []string{"/usr", "/bin", "/lib", "/lib64", "/etc"} {
			argv = append(argv, "--ro-bind-try", d, d)
		}
		for _, h := range s.hide {
			if isUnder(h, "/usr", "/bin", "/lib", "/lib64", "/etc") {
				argv = append(argv, "--size", "4096", "--tmpfs", h, "--remount-ro", h)
			}
		}
		// Every tmpfs has a size, and the ones not meant for writing (the
		// root, /dev) are read-only: tmpfs pages are memory that no
		// rlimit counts.
		argv = append(argv, "--ro-bind", private, "/grader", "--proc", "/proc", "--dev", "/dev",
			"--size", strconv.FormatInt(shmSize, 10), "--perms", "1777", "--tmpfs", "/dev/shm",
			"--size", strconv.FormatInt(r.Limits.FileSize, 10), "--tmpfs", "/tmp",
			"--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp",
			"--clearenv", "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--setenv", "PATH", "/usr/bin:/bin",
			"--setenv", "LANG", "C.UTF-8")
		for _, kv := range extra {
			k, v, _ := strings.Cut(kv, "=")
			argv = append(argv, "--setenv", k, v)
		}
		argv = append(argv, "/grader/"+filepath.Base(binary))
		dir, env = "/", []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	} else {
		argv = append(argv, binary)
	}
	argv = append(argv, r.Args...)

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	// A session of its own: its own process group (killed as one) and no
	// controlling terminal, so no test writes to the instructor's
	// terminal through /dev/tty.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if uid >= 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), NoSetGroups: false}
	}
	var out Outcome
	pr, pw, err := os.Pipe()
	if err != nil {
		return Outcome{}, fmt.Errorf("sandbox: %w", err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	var secretW, reportR *os.File
	closeAll := func() {
		for _, f := range append(cmd.ExtraFiles, pr, pw, secretW, reportR) {
			if f != nil {
				f.Close()
			}
		}
	}
	if r.Secret != "" {
		secretR, sw, err := os.Pipe()
		if err != nil {
			closeAll()
			return Outcome{}, fmt.Errorf("sandbox: %w", err)
		}
		rr, reportW, err := os.Pipe()
		if err != nil {
			secretR.Close()
			sw.Close()
			closeAll()
			return Outcome{}, fmt.Errorf("sandbox: %w", err)
		}
		secretW, reportR = sw, rr
		cmd.ExtraFiles = []*os.File{secretR, reportW} // fd 3 and fd 4
	}
	start := time.Now()
	startCmd := cmd.Start
	var cg *testCgroup
	if s.cgroups != nil && uid >= 0 {
		if cg, err = s.cgroups.newTest(uid, r.Limits.AddressSpace, r.Limits.Procs); err != nil {
			closeAll()
			return Outcome{}, err
		}
		defer cg.remove()
		startCmd = func() error { return cg.start(cmd) }
	}
	if err := startCmd(); err != nil {
		closeAll()
		return Outcome{}, fmt.Errorf("sandbox: starting the test process: %w", err)
	}
	pw.Close()
	for _, f := range cmd.ExtraFiles {
		f.Close() // the child's ends
	}
	pgid := cmd.Process.Pid
	killAll := func() {
		syscall.Kill(-pgid, syscall.SIGKILL)
		if uid >= 0 {
			killUID(uid)
		}
	}
	// What the uid left in the machine's shared folders goes when the
	// test is over.
	var removeLeftovers func()
	if uid >= 0 && s.bwrap == "" {
		removeLeftovers = func() { removeOwned(uid, "/dev/shm", "/tmp", os.TempDir()) }
	}
	if err := supervise(ctx, cmd, r, start, pr, secretW, reportR, killAll, removeLeftovers, &out); err != nil {
		if err == ctx.Err() {
			return Outcome{}, err
		}
		return out, err
	}
	out.OOMKilled = cg != nil && cg.oomKilled()
	// bwrap reports a child killed by a signal as 128+signal.
	if out.Signal == 0 && out.ExitCode > 128 && out.ExitCode < 128+65 && s.bwrap != "" {
		out.Signal = syscall.Signal(out.ExitCode - 128)
	}
	return out, nil
}

// WarnReadable says, once, on the notices, which hidden folders (the
// course, the caches) every user can read, when tests run without
// bubblewrap as root's fresh uids: such a test sees the host's files as
// any user does, the course's hidden tests and solutions included. The
// grader calls it before it grades others' code.
func (s *Sandbox) WarnReadable() {
	s.probe()
	if s.uids == nil || s.bwrap != "" {
		return // bubblewrap mounts none of them; not root: tests run as the grader's user
	}
	s.warnOnce.Do(s.warnReadable)
}

func (s *Sandbox) warnReadable() {
	for _, h := range s.hide {
		if othersCanRead(h) {
			fmt.Fprintf(s.notices, "grader: notice: %s is readable by every user, so by the tests, which run without bubblewrap (the hidden tests and solutions included); make it private (chmod 700 on it or a folder above it)\n", h)
		}
	}
}

// othersCanRead reports whether a user who is neither the owner nor in the
// group of path and of the folders above it can list path: every folder
// on the way searchable by others, and path readable by others.
func othersCanRead(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	info, err := os.Stat(abs)
	if err != nil || info.Mode().Perm()&0o004 == 0 {
		return false
	}
	for d := abs; ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil || info.Mode().Perm()&0o001 == 0 {
			return false
		}
		if filepath.Dir(d) == d {
			return true
		}
	}
}

// removeOwned removes what uid owns directly in each folder of dirs (a
// test's files in /tmp or /dev/shm, without bubblewrap's private ones).
// Every process of uid is dead by then, so nothing changes the trees
// while they go, and os.RemoveAll follows no symlink.
func removeOwned(uid int, dirs ...string) {
	seen := map[string]bool{}
	for _, dir := range dirs {
		if seen[dir] {
			continue
		}
		seen[dir] = true
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			info, err := e.Info()
			if err != nil {
				continue
			}
			if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
	}
}

// acquireUID takes a uid from the pool that no other grader on this machine
// holds either: each uid is held through an exclusive lock on a file, so
// two graders never share a uid, its process limit or its clean-up.
func (s *Sandbox) acquireUID(ctx context.Context) (int, func(), error) {
	for {
		var uid int
		select {
		case uid = <-s.uids:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
		lock, err := openUIDLock(uid)
		if err != nil {
			s.uids <- uid
			return 0, nil, fmt.Errorf("sandbox: %w", err)
		}
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			// Another grader holds it: try the next one a little later.
			lock.Close()
			s.uids <- uid
			select {
			case <-time.After(10 * time.Millisecond):
			case <-ctx.Done():
				return 0, nil, ctx.Err()
			}
			continue
		}
		// A grader that died without cleaning up may have left processes
		// running as this uid: they are nobody's now.
		killUID(uid)
		return uid, func() {
			lock.Close() // releases the lock
			s.uids <- uid
		}, nil
	}
}

// lockDir holds the lock files of the pool's uids: root's alone (0700), in
// /run, where no other user can plant a file, a symlink or a lock before
// the grader does.
var lockDir = "/run/gpumem-grader"

// openUIDLock opens (creating it) the lock file of uid in lockDir, which
// must be a folder of root's, closed to others; no symlink is followed.
func openUIDLock(uid int) (*os.File, error) {
	if err := os.Mkdir(lockDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("sandbox: the lock folder: %w", err)
	}
	dfd, err := syscall.Open(lockDir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: the lock folder %s: %w", lockDir, err)
	}
	defer syscall.Close(dfd)
	var st syscall.Stat_t
	if err := syscall.Fstat(dfd, &st); err != nil {
		return nil, fmt.Errorf("sandbox: the lock folder %s: %w", lockDir, err)
	}
	if st.Uid != 0 || st.Mode&0o077 != 0 {
		return nil, fmt.Errorf("sandbox: the lock folder %s must be root's and closed to others (mode 0700); it is uid %d's, mode %o", lockDir, st.Uid, st.Mode&0o777)
	}
	fd, err := syscall.Openat(dfd, fmt.Sprintf("uid-%d.lock", uid), syscall.O_RDWR|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sandbox: the lock file of uid %d: %w", uid, err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(lockDir, fmt.Sprintf("uid-%d.lock", uid))), nil
}

// procUIDs calls fn with the pid and real uid of every process, the count
// of its threads, and whether it is a zombie (dead, holding no resources
// but still counted against its uid's process limit until it is reaped).
// The grader reads every process's status a few times for each test it
// runs, so each is read with three system calls into one buffer (os.ReadFile
// took seven: two fstats, a fcntl and a second read) where each call is dear
// (a paravirtualized VM).
func procUIDs(fn func(pid, uid, threads int, zombie bool)) {
	dir, err := os.Open("/proc")
	if err != nil {
		return
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	var buf [4096]byte
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		path := "/proc/" + name + "/status"
		n, ok := readStatus(path, buf[:])
		if !ok {
			continue
		}
		data := buf[:n]
		if n == len(buf) { // a long Groups line, say: read all of it
			if data, err = os.ReadFile(path); err != nil {
				continue
			}
		}
		uid, threads, zombie := parseStatus(data)
		fn(pid, uid, threads, zombie)
	}
}

// readStatus reads a /proc/PID/status file into buf with one read, which
// returns the whole file when it fits (about 1.4 KiB).
func readStatus(path string, buf []byte) (int, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0, false
	}
	defer syscall.Close(fd)
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		return n, err == nil && n > 0
	}
}

// parseStatus returns the real uid (-1 without a Uid line), the thread
// count (1 without a Threads line) and whether the state is zombie or dead,
// from the text of a /proc/PID/status file.
func parseStatus(data []byte) (uid, threads int, zombie bool) {
	uid, threads = -1, 1
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if rest, ok := bytes.CutPrefix(line, []byte("State:")); ok {
			state := bytes.TrimSpace(rest)
			zombie = bytes.HasPrefix(state, []byte("Z")) || bytes.HasPrefix(state, []byte("X"))
		} else if rest, ok := bytes.CutPrefix(line, []byte("Uid:")); ok {
			if f := bytes.Fields(rest); len(f) > 0 {
				uid, _ = strconv.Atoi(string(f[0]))
			}
		} else if rest, ok := bytes.CutPrefix(line, []byte("Threads:")); ok {
			threads, _ = strconv.Atoi(string(bytes.TrimSpace(rest)))
		}
	}
	return uid, threads, zombie
}

// chargedTasks counts the tasks that RLIMIT_NPROC charges to uid now: the
// live ones and the zombies not yet reaped.
func chargedTasks(uid int) int {
	n := 0
	procUIDs(func(_, u, threads int, _ bool) {
		if u == uid {
			n += threads
		}
	})
	return n
}

// killUID kills every process of uid, again until none is left (a fork
// bomb keeps forking while it is being killed, and a killed process can
// take a while to die on a busy machine), for at most about 5 s.
func killUID(uid int) {
	for i := range 600 {
		found := false
		procUIDs(func(pid, u, _ int, zombie bool) {
			if u == uid && !zombie {
				found = true
				syscall.Kill(pid, syscall.SIGKILL)
			}
		})
		if !found {
			return
		}
		time.Sleep(time.Duration(1+i/100*2) * time.Millisecond)
	}
}

// Leftovers returns, for each uid of the pool that no grader holds now,
// how many of its tasks are alive: after grading, every count is zero (a
// uid another grader holds is that grader's business).
func Leftovers() (map[int]int, error) {
	left := map[int]int{}
	for i := range uidCount {
		uid := uidBase + i
		lock, err := openUIDLock(uid)
		if err != nil {
			return nil, err
		}
		if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			n := 0
			procUIDs(func(_, u, threads int, zombie bool) {
				if u == uid && !zombie {
					n += threads
				}
			})
			left[uid] = n
		}
		lock.Close()
	}
	return left, nil
}
