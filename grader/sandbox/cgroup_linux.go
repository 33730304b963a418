package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cgroups put each test, all its processes together, under a memory and a
// process limit, which rlimits (per process) cannot do. They need root and
// a cgroup hierarchy the grader may write: cgroup v2 with the memory and
// pids controllers delegated to the grader's cgroup, or cgroup v1's memory
// and pids hierarchies.
type cgroups struct {
	v2   bool
	base map[string]string // controller ("memory", "pids"; "" for v2) → the grader's folder, gpumem-grader
	own  map[string]string // controller → the grader's own cgroup (v1: a thread returns there)
}

const cgroupRoot = "/sys/fs/cgroup"

// cpuPeriodMicros is the period of a test's CPU quota, which is as long:
// one CPU.
const cpuPeriodMicros = 100000

// findCgroups returns the grader's cgroups, or why they cannot be used.
// They are read once per process, before any test starts: on cgroup v1 a
// thread of the grader stands in a test's cgroup while it starts the test
// (testCgroup.start), and /proc/self/cgroup read at that moment would
// name the test's cgroup as the grader's own, nesting every later test's
// cgroup inside it.
func findCgroups() (*cgroups, error) {
	cgroupsOnce.Do(func() { foundCgroups, cgroupsErr = readCgroups() })
	return foundCgroups, cgroupsErr
}

var (
	cgroupsOnce  sync.Once
	foundCgroups *cgroups
	cgroupsErr   error
)

func readCgroups() (*cgroups, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("not root")
	}
	paths, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	if p, ok := paths[""]; ok && fileExists(filepath.Join(cgroupRoot, "cgroup.controllers")) {
		return v2Cgroups(filepath.Join(cgroupRoot, p))
	}
	c := &cgroups{base: map[string]string{}, own: map[string]string{}}
	for _, ctl := range []string{"memory", "pids"} {
		p, ok := paths[ctl]
		if !ok {
			return nil, fmt.Errorf("no cgroup v1 %s hierarchy", ctl)
		}
		own := filepath.Join(cgroupRoot, ctl, p)
		base := filepath.Join(own, "gpumem-grader")
		if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("cgroup v1 %s: %w", ctl, err)
		}
		c.own[ctl], c.base[ctl] = own, base
	}
	// The cpu controller is optional: without it a test's CPU time is
	// bounded by RLIMIT_CPU and its processes by the pids limit, but not
	// its share of the machine.
	if p, ok := paths["cpu"]; ok {
		own := filepath.Join(cgroupRoot, "cpu", p)
		base := filepath.Join(own, "gpumem-grader")
		if err := os.Mkdir(base, 0o755); err == nil || errors.Is(err, os.ErrExist) {
			c.own["cpu"], c.base["cpu"] = own, base
		}
	}
	return c, nil
}

// v2Cgroups prepares dir/gpumem-grader with the memory and pids controllers
// for its children. The grader's own cgroup must let it enable them, which
// it cannot while processes live in it (cgroup v2's "no internal
// processes"): run the grader in a delegated cgroup of its own.
func v2Cgroups(dir string) (*cgroups, error) {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	have := strings.Fields(string(data))
	for _, ctl := range []string{"memory", "pids"} {
		if !slices.Contains(have, ctl) {
			return nil, fmt.Errorf("cgroup v2: the %s controller is not delegated to %s", ctl, dir)
		}
	}
	controllers := "+memory +pids"
	if slices.Contains(have, "cpu") {
		controllers += " +cpu"
	}
	enable := func(d string) error {
		return os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte(controllers), 0)
	}
	if err := enable(dir); err != nil {
		return nil, fmt.Errorf("cgroup v2: enabling memory and pids below %s: %w", dir, err)
	}
	base := filepath.Join(dir, "gpumem-grader")
	if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	if err := enable(base); err != nil {
		return nil, fmt.Errorf("cgroup v2: enabling memory and pids below %s: %w", base, err)
	}
	return &cgroups{v2: true, base: map[string]string{"": base}}, nil
}

// ownCgroups reads /proc/self/cgroup: controller → path ("" for v2).
func ownCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	paths := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			paths[ctl] = parts[2]
		}
	}
	return paths, sc.Err()
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// testCgroup is one test's cgroup (one folder per controller).
type testCgroup struct {
	c    *cgroups
	dirs map[string]string // controller → folder
}

// newTest makes the cgroup of a test run as uid (which no other test holds
// meanwhile): memory bytes of memory (no swap) and procs tasks.
func (c *cgroups) newTest(uid int, memory int64, procs int) (*testCgroup, error) {
	t := &testCgroup{c: c, dirs: map[string]string{}}
	name := "uid-" + strconv.Itoa(uid)
	for ctl, base := range c.base {
		dir := filepath.Join(base, name)
		// A grader that died may have left it: empty it first.
		removeCgroupTree(dir)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.remove()
			return nil, fmt.Errorf("sandbox: cgroup: %w", err)
		}
		t.dirs[ctl] = dir
	}
	mem, pids := strconv.FormatInt(memory, 10), strconv.Itoa(procs)
	var writes [][2]string
	// One CPU for all the test's processes together: a test runs one
	// thread of Go code (GOMAXPROCS=1), and whatever else it starts (200
	// busy shells, say) shares that CPU instead of the machine, so a
	// classmate graded beside it keeps the other cores.
	period := strconv.Itoa(cpuPeriodMicros)
	if c.v2 {
		d := t.dirs[""]
		writes = [][2]string{{d + "/memory.max", mem}, {d + "/memory.swap.max", "0"}, {d + "/pids.max", pids}, {d + "/cpu.max", period + " " + period}}
	} else {
		d := t.dirs["memory"]
		writes = [][2]string{{d + "/memory.limit_in_bytes", mem}, {d + "/memory.memsw.limit_in_bytes", mem}, {t.dirs["pids"] + "/pids.max", pids}}
		if cpu, ok := t.dirs["cpu"]; ok {
			writes = append(writes, [2]string{cpu + "/cpu.cfs_period_us", period}, [2]string{cpu + "/cpu.cfs_quota_us", period})
		}
	}
	for _, w := range writes {
		err := os.WriteFile(w[0], []byte(w[1]), 0)
		if err != nil && errors.Is(err, os.ErrNotExist) && (strings.HasSuffix(w[0], ".swap.max") || strings.HasSuffix(w[0], ".memsw.limit_in_bytes") || strings.HasSuffix(w[0], "/cpu.max")) {
			continue // no swap accounting: no swap to limit; no cpu controller: RLIMIT_CPU only
		}
		if err != nil {
			t.remove()
			return nil, fmt.Errorf("sandbox: cgroup: %w", err)
		}
	}
	return t, nil
}

// start starts cmd inside the cgroup: from its first instruction, so that
// nothing it forks escapes. cgroup v2 starts it there (clone3 with
// CLONE_INTO_CGROUP); cgroup v1, which moves single threads, forks it
// from a thread moved in for that moment.
func (t *testCgroup) start(cmd *exec.Cmd) error {
	if t.c.v2 {
		dir, err := os.Open(t.dirs[""])
		if err != nil {
			return err
		}
		defer dir.Close()
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(dir.Fd())
		return cmd.Start()
	}
	runtime.LockOSThread()
	tid := strconv.Itoa(syscall.Gettid())
	moved := map[string]bool{}
	back := func() error {
		var firstErr error
		for ctl := range moved {
			if err := os.WriteFile(filepath.Join(t.c.own[ctl], "tasks"), []byte(tid), 0); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		if firstErr != nil {
			// This thread is stuck in a test's cgroup: let the runtime
			// end it rather than run other goroutines there.
			return fmt.Errorf("sandbox: cgroup: moving a thread back: %w", firstErr)
		}
		runtime.UnlockOSThread()
		return nil
	}
	for ctl, dir := range t.dirs {
		if err := os.WriteFile(filepath.Join(dir, "tasks"), []byte(tid), 0); err != nil {
			if berr := back(); berr != nil {
				return berr
			}
			return fmt.Errorf("sandbox: cgroup: %w", err)
		}
		moved[ctl] = true
	}
	startErr := cmd.Start()
	if err := back(); err != nil {
		return err
	}
	return startErr
}

// oomKilled reports whether the kernel killed a process of the test for
// going past the memory limit.
func (t *testCgroup) oomKilled() bool {
	file := filepath.Join(t.dirs["memory"], "memory.oom_control")
	if t.c.v2 {
		file = filepath.Join(t.dirs[""], "memory.events")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if n, ok := strings.CutPrefix(line, "oom_kill "); ok && strings.TrimSpace(n) != "0" {
			return true
		}
	}
	return false
}

// remove kills what is left in the cgroup and removes it.
func (t *testCgroup) remove() {
	for _, dir := range t.dirs {
		killCgroup(dir)
		for range 500 {
			if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// removeCgroupTree empties and removes the cgroup folder dir and every
// cgroup below it, the deepest first (a grader that died may have left
// them; an older one nested its tests' cgroups in one of them).
func removeCgroupTree(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			removeCgroupTree(filepath.Join(dir, e.Name()))
		}
	}
	killCgroup(dir)
	os.Remove(dir)
}

// killCgroup kills every process in the cgroup folder dir but the grader
// itself: on cgroup v1 cgroup.procs lists the grader's pid while one of
// its threads stands in the cgroup to start a test there.
func killCgroup(dir string) {
	if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	self := os.Getpid()
	for range 100 {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return
		}
		others := false
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && pid != self {
				syscall.Kill(pid, syscall.SIGKILL)
				others = true
			}
		}
		if !others {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
