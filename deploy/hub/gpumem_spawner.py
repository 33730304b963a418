"""CgroupSpawner: JupyterHub's LocalProcessSpawner with per-student limits
and a student who is treated as hostile.

Each student's server, and everything it starts (kernels, go build, the
programs of the cells), runs in its own cgroup, whose limits the Linux
kernel enforces: memory (the OOM killer acts inside the student's group
only, so the hub and the other students are untouched), CPU time (a quota of
cpu_limit cores) and the number of processes. The server's process joins its
group itself, before it drops to the student's uid and before it runs
anything, so nothing it starts escapes the limits. It also gets its own
mount namespace with private, sized /tmp, /var/tmp and /dev/shm (tmpfs,
whose pages count in the memory limit), and its own IPC namespace (System V
shared memory dies with the server): nothing a student leaves there is
seen by a classmate or outlives the server. Stopping the server kills every
process left in the group, detached ones included, and removes the group.

cgroup v2 (a unified hierarchy): the groups live under the hub's own
cgroup, which systemd delegates to it (gpumem-hub.service, Delegate=yes);
the hub moves itself into a "hub" leaf so that its sub-groups may have
controllers. cgroup v1 (separate memory, cpu and pids hierarchies): systemd
delegates nothing there, so the groups live in a "gpumem-hub" group at the
top of each hierarchy. GPUMEM_CGROUP names another parent (the tests use
their own).

Only members of the student group (uid 1000 and above) get a server: an
admin's, root's or a system account's login starts none. Root never works
inside a student's home, nor changes it: the home must be the student's
and closed (mode 700, as add-students.sh makes it), and the course is
copied into ~/course by a child process that has dropped to the student's
uid, so a symbolic link a student plants there can
only lead to what the student could reach anyway. The course copied is the
student edition (`grader release`); a course folder holding solutions or
hidden tests is refused. The copy is made on first start only, so the
student's work is kept.
"""

import asyncio
import ctypes
import fcntl
import grp
import ipaddress
import os
import pwd
import signal
import socket
import struct
import time

from jupyterhub.spawner import LocalProcessSpawner
from jupyterhub.traitlets import ByteSpecification
from traitlets import Bool, Integer, Unicode

CGROUP_ROOT = "/sys/fs/cgroup"
CFS_PERIOD_US = 100000
V1_CONTROLLERS = ("memory", "cpu", "pids")

# Folders of the instructor's course that must never reach a student.
INSTRUCTOR_ONLY = ("solutions", os.path.join("grader", "hidden"))

# Run as the student, in the home: copy the course on first start. $1 is
# the student edition. The copy appears whole or not at all (the rename);
# tar, run by the student, cannot give the files another owner. bin/ and
# share/ (the tools and the kernel) stay shared, on the PATH and the
# JUPYTER_PATH. The home itself is never changed (its mode is checked
# before, by root): the spawner changes no home it did not create.
STUDENT_SETUP = r"""
set -eu
umask 077
cd "$HOME"
if [ -e course ] || [ -L course ]; then
	if [ ! -d course/notebooks ]; then
		echo "~/course/notebooks is missing (moved, or deleted): move it back, or rename ~/course to get a fresh copy"
		exit 1
	fi
	exit 0
fi
rm -rf .course.copying
mkdir .course.copying
tar -C "$1" --exclude=./bin --exclude=./share -cf - . | tar -C .course.copying --no-same-owner -xf -
mv -T .course.copying course
[ -d course/notebooks ] || { echo "the copy of the course is not in ~/course (it was moved away)"; exit 1; }
echo "copied the course into $HOME/course"
"""

# Linux constants for the server's namespaces (from <sched.h>, <sys/mount.h>).
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x08000000, 0x40000000
# <linux/sockios.h>, <net/if.h>: to bring the namespace's loopback up.
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1

# The servers' network namespaces: student slot n (uid - uid_min) gets the
# /30 at STUDENT_NET + 4n, the host end .1 and the server .2; the hub's API
# listens on HUB_ADDRESS, an address of the host's loopback that each
# namespace reaches through its own link (jupyterhub_config.py).
STUDENT_NET = ipaddress.IPv4Network("10.213.0.0/16")
HUB_ADDRESS = "10.214.0.1"
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 0x4000, 0x40000
_libc = ctypes.CDLL(None, use_errno=True)


def _write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def _mount_tmpfs(target, size):
    opts = ("size=%s,mode=1777" % size).encode()
    if _libc.mount(b"tmpfs", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts) != 0:
        raise OSError(ctypes.get_errno(), "mount tmpfs on " + target)


def _loopback_up():
    """Brings up lo in the calling process's (new) network namespace."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        req = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(s, SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))
    finally:
        s.close()


def student_link(uid, uid_min):
    """The (host, server) addresses and the host interface name of a
    student's link, from their uid."""
    slot = uid - uid_min
    if not 0 <= slot < STUDENT_NET.num_addresses // 4:
        raise RuntimeError("gpumem: uid %d is outside the %d students the network %s holds"
                           % (uid, STUDENT_NET.num_addresses // 4, STUDENT_NET))
    base = STUDENT_NET.network_address + 4 * slot
    return str(base + 1), str(base + 2), "gpm%d" % uid


def _own_cgroup_v2():
    """The hub's cgroup in the unified hierarchy, e.g. /system.slice/gpumem-hub.service."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                return line[3:].strip()
    return "/"


class CgroupSpawner(LocalProcessSpawner):
    course_dir = Unicode(help="the student edition (grader release) copied into each student's home on first start").tag(config=True)
    pids_limit = Integer(512, help="the most processes a student's server may run").tag(config=True)
    tmp_size = Unicode("1G", help="the size of the server's private /tmp, /var/tmp and /dev/shm (each; their pages count in mem_limit)").tag(config=True)
    disk_limit = ByteSpecification(None, allow_none=True,
                                   help="a disk quota on the student's home (setquota; the home's filesystem must have user quotas on)").tag(config=True)
    network_namespace = Bool(True, help="each server in its own network namespace, reached through its own veth link "
                             "(its kernels and ports are its own)").tag(config=True)
    inode_limit = Integer(0, help="the most files and folders a student may own on the home's filesystem, with disk_limit "
                               "(0: one per 8 KiB of disk_limit, at least 50,000)").tag(config=True)
    student_group = Unicode("students", help="the Unix group whose members, and only they, get a server").tag(config=True)
    uid_min = Integer(1000, help="the lowest uid that may get a server (login.defs' UID_MIN): system accounts never do").tag(config=True)
    cgroup_parent = Unicode(help="the cgroup holding the students' groups (default: the hub's own on cgroup v2, /gpumem-hub on v1)").tag(config=True)

    def _student(self):
        """The student's account: a member of student_group with a uid of
        at least uid_min. Any other account, an admin's, root's or a
        system account's (postgres once got a server because it owned its
        home), gets no server: the hub serves students only."""
        name = self.user.name
        try:
            student = pwd.getpwnam(name)
        except KeyError:
            raise RuntimeError("gpumem: no Unix account %r; only students get a server" % name)
        try:
            group = grp.getgrnam(self.student_group)
        except KeyError:
            raise RuntimeError("gpumem: the student group %r does not exist (GPUMEM_STUDENT_GROUP)" % self.student_group)
        if student.pw_uid < self.uid_min or student.pw_uid == 0:
            raise RuntimeError("gpumem: %s has uid %d, below %d: a system account gets no server"
                               % (name, student.pw_uid, self.uid_min))
        if name not in group.gr_mem and student.pw_gid != group.gr_gid:
            raise RuntimeError("gpumem: %s is not in the group %s: only students get a server "
                               "(admins manage the class from /hub/admin, without a server of their own)"
                               % (name, self.student_group))
        return student

    # --- cgroups ----------------------------------------------------------

    def _v2(self):
        return os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers"))

    def _parent(self):
        if self.cgroup_parent:
            return self.cgroup_parent
        if self._v2():
            own = _own_cgroup_v2()
            if own.endswith("/hub"):  # the leaf the hub moved itself into
                own = os.path.dirname(own)
            return own if own != "/" else "/gpumem-hub"
        return "/gpumem-hub"

    def _groups(self):
        """The cgroup folders of this student, one per hierarchy."""
        name = "student-" + self.user.name
        parent = self._parent().strip("/")
        if self._v2():
            return [os.path.join(CGROUP_ROOT, parent, name)]
        return [os.path.join(CGROUP_ROOT, c, parent, name) for c in V1_CONTROLLERS]

    def _prepare_parent_v2(self, parent):
        """Enables the controllers for the students' groups under parent.

        cgroup v2 lets a group hand controllers to its children only when it
        holds no process itself: when parent is the hub's own (delegated)
        group, the hub and its proxy move to a "hub" leaf first."""
        os.makedirs(parent, exist_ok=True)
        procs = os.path.join(parent, "cgroup.procs")
        with open(procs) as f:
            pids = f.read().split()
        if pids:
            leaf = os.path.join(parent, "hub")
            os.makedirs(leaf, exist_ok=True)
            for pid in pids:
                try:
                    _write(os.path.join(leaf, "cgroup.procs"), pid)
                except ProcessLookupError:
                    pass
        _write(os.path.join(parent, "cgroup.subtree_control"), "+memory +cpu +pids")

    def _make_groups(self):
        groups = self._groups()
        if self._v2():
            g = groups[0]
            self._prepare_parent_v2(os.path.dirname(g))
            os.makedirs(g, exist_ok=True)
            if self.mem_limit:
                _write(os.path.join(g, "memory.max"), self.mem_limit)
                _write(os.path.join(g, "memory.swap.max"), 0)
            if self.cpu_limit:
                _write(os.path.join(g, "cpu.max"), "%d %d" % (int(self.cpu_limit * CFS_PERIOD_US), CFS_PERIOD_US))
            _write(os.path.join(g, "pids.max"), self.pids_limit)
            return groups
        memory, cpu, pids = groups
        for g in groups:
            os.makedirs(g, exist_ok=True)
        if self.mem_limit:
            _write(os.path.join(memory, "memory.limit_in_bytes"), self.mem_limit)
            swap = os.path.join(memory, "memory.memsw.limit_in_bytes")
            if os.path.exists(swap):
                _write(swap, self.mem_limit)
        if self.cpu_limit:
            _write(os.path.join(cpu, "cpu.cfs_period_us"), CFS_PERIOD_US)
            _write(os.path.join(cpu, "cpu.cfs_quota_us"), int(self.cpu_limit * CFS_PERIOD_US))
        _write(os.path.join(pids, "pids.max"), self.pids_limit)
        return groups

    def _group_pids(self):
        pids = set()
        for g in self._groups():
            try:
                with open(os.path.join(g, "cgroup.procs")) as f:
                    pids.update(int(p) for p in f.read().split())
            except FileNotFoundError:
                pass
        return pids

    async def _kill_groups(self):
        """Kills every process in the student's groups and removes them.

        A student may have left detached processes (setsid, nohup) that
        outlive the server; they are in the group all the same."""
        for g in self._groups():
            kill = os.path.join(g, "cgroup.kill")  # cgroup v2, Linux 5.14 and later
            if os.path.exists(kill):
                _write(kill, 1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pids = self._group_pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            await asyncio.sleep(0.05)
        left = []
        for g in self._groups():
            for _ in range(100):
                try:
                    os.rmdir(g)
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY while the last ones exit
                    await asyncio.sleep(0.05)
            else:
                left.append(g)
        if left:
            self.log.warning("gpumem: %s's groups could not be removed: %s (processes left: %s)",
                             self.user.name, left, sorted(self._group_pids()))
        else:
            self.log.info("gpumem: %s's processes killed and groups removed", self.user.name)

    # --- the student's side -----------------------------------------------

    def _lookup_account(self):
        """Looks the student up once for a start: the account (_student's
        checks) and the groups they belong to. Each lookup may ask NSS
        (files, LDAP, ...), and grp.getgrall() reads every group: once,
        not at each step of the start."""
        student = self._student()
        gids = sorted({student.pw_gid} | {g.gr_gid for g in grp.getgrall() if student.pw_name in g.gr_mem})
        self._account = (student, gids)
        return self._account

    def _account_now(self):
        """The account and groups of this start, or looked up now (a stop
        after the hub restarted)."""
        return getattr(self, "_account", None) or self._lookup_account()

    def _as_student(self, groups, private_mounts):
        """A preexec_fn: the child joins the student's groups, optionally
        gets its private /tmp, /var/tmp and /dev/shm, then drops to the
        student's uid, gid and groups, all before it runs anything."""
        student, gids = self._account_now()
        uid, gid = student.pw_uid, student.pw_gid
        home, size = student.pw_dir, self.tmp_size
        network = private_mounts and self.network_namespace

        def preexec():
            for g in groups:
                _write(os.path.join(g, "cgroup.procs"), os.getpid())
            if private_mounts:
                # Its own IPC namespace too: System V shared memory and
                # message queues made in the server die with it (the
                # namespace goes when its last process exits), and no
                # classmate's segments are visible (3 GB of them once
                # outlived a stopped server).
                # And its own network namespace: its kernels' ports on its
                # own loopback (a classmate once read another's cell output
                # from the kernel's IOPub port on the shared 127.0.0.1), and
                # its own ports (binding every ephemeral port once broke
                # every connect() on the machine).
                flags = CLONE_NEWNS | CLONE_NEWIPC | (CLONE_NEWNET if network else 0)
                if _libc.unshare(flags) != 0:
                    raise OSError(ctypes.get_errno(), "unshare(%#x)" % flags)
                if network:
                    _loopback_up()
                # Mounts made here stay in this namespace.
                if _libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
                    raise OSError(ctypes.get_errno(), "mount --make-rprivate /")
                for target in ("/tmp", "/var/tmp", "/dev/shm"):
                    _mount_tmpfs(target, size)
                # A /proc of its own that lists the student's processes only
                # (hidepid=invisible; a new proc instance since Linux 5.8):
                # the hub's, root's and classmates' processes, their
                # command lines and environments, are not even named.
                # Visibility is what a PID namespace would add here; one
                # would also need a reaper in front of the server, whose pid
                # the hub tracks and signals.
                if _libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, b"hidepid=invisible") != 0:
                    raise OSError(ctypes.get_errno(), "mount proc on /proc (hidepid=invisible)")
            os.setgroups(gids)
            os.setgid(gid)
            os.setuid(uid)
            try:
                os.chdir(home)
            except OSError:
                pass

        return preexec

    def get_env(self):
        env = super().get_env()
        # Jupyter's configuration comes from the course's root-owned
        # folder (JUPYTER_CONFIG_DIR, jupyterhub_config.py), never from
        # ~/.jupyter: a custom.js, a page template or a config file there
        # would run the student's script on the hub's origin in an admin's
        # browser. JupyterLab's own settings and workspaces stay in the
        # home, where Lab saves them.
        home = self._account_now()[0].pw_dir
        env["JUPYTERLAB_SETTINGS_DIR"] = os.path.join(home, ".jupyter", "lab", "user-settings")
        env["JUPYTERLAB_WORKSPACES_DIR"] = os.path.join(home, ".jupyter", "lab", "workspaces")
        return env

    def make_preexec_fn(self, name):
        return self._as_student(self._groups(), private_mounts=True)

    async def _student_setup(self, groups):
        """Checks the home and copies the course, as the student."""
        student = self._account_now()[0]
        info = os.lstat(student.pw_dir)
        if info.st_uid != student.pw_uid:
            raise RuntimeError("gpumem: %s's home %s is owned by uid %d, not by the student; not starting"
                               % (self.user.name, student.pw_dir, info.st_uid))
        if info.st_mode & 0o077:
            raise RuntimeError("gpumem: %s's home %s is mode %o, open to others; not starting "
                               "(deploy/hub/add-students.sh closes the homes of the roster, or: chmod 700 %s)"
                               % (self.user.name, student.pw_dir, info.st_mode & 0o777, student.pw_dir))
        env = {"HOME": student.pw_dir, "PATH": "/usr/bin:/bin", "LC_ALL": "C"}
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", STUDENT_SETUP, "sh", self.course_dir, env=env,
            preexec_fn=self._as_student(groups, private_mounts=False),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout=300)
        except asyncio.TimeoutError:
            proc.kill()
            raise RuntimeError("gpumem: copying the course into %s's home took over 300 s" % self.user.name)
        for line in out.decode(errors="replace").splitlines():
            self.log.info("gpumem: %s: %s", self.user.name, line)
        if proc.returncode != 0:
            raise RuntimeError("gpumem: preparing %s's home failed (exit status %d)" % (self.user.name, proc.returncode))

    def inodes(self):
        """The inode limit that goes with disk_limit."""
        return self.inode_limit or max(50000, self.disk_limit // 8192)

    async def _set_quota(self):
        """Sets the student's disk quota on their home's filesystem, or
        refuses to start when it cannot: a limit the instructor asked for
        is never silently missing."""
        if not self.disk_limit:
            return
        student = self._account_now()[0]
        kib = str(max(1, self.disk_limit // 1024))
        # Inodes too: with blocks limited and inodes not, a student fills
        # the filesystem's inode table with empty files.
        inodes = str(self.inodes())
        try:
            proc = await asyncio.create_subprocess_exec(
                "/bin/sh", "-c", 'exec setquota -u "$1" "$2" "$2" "$3" "$3" "$(stat -c %m "$4")"', "sh",
                student.pw_name, kib, inodes, student.pw_dir,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
            out, _ = await asyncio.wait_for(proc.communicate(), timeout=30)
        except (OSError, asyncio.TimeoutError) as e:
            out, proc = str(e).encode(), None
        if proc is None or proc.returncode != 0:
            raise RuntimeError("gpumem: GPUMEM_DISK_LIMIT=%d bytes, but the quota on %s's home could not be set (%s): "
                               "enable user quotas on its filesystem (docs/instructors.md) or unset the limit"
                               % (self.disk_limit, self.user.name, out.decode(errors="replace").strip()))

    def _check_course(self):
        if not self.course_dir or not os.path.isdir(self.course_dir):
            raise RuntimeError("gpumem: no course folder at %r: run deploy/hub/install.sh" % self.course_dir)
        for part in INSTRUCTOR_ONLY:
            if os.path.lexists(os.path.join(self.course_dir, part)):
                raise RuntimeError("gpumem: %s holds %s/: students get the student edition only (grader release)"
                                   % (self.course_dir, part))

    async def start(self):
        student, _ = self._lookup_account()  # a student's, or nothing is made for it
        self._check_course()
        # A previous server may have left processes (a hub restart): they go.
        if self._group_pids():
            await self._kill_groups()
        groups = self._make_groups()
        await self._set_quota()
        await self._student_setup(groups)
        if self.network_namespace:
            # The server listens on every address of its namespace: its
            # link's is the only one reachable, and only from the host.
            self.ip = "0.0.0.0"
            _, peer, _ = student_link(student.pw_uid, self.uid_min)
            self.hub_connect_url = "http://%s:%d" % (HUB_ADDRESS, self.hub_port())
        ip_port = await super().start()
        if self.network_namespace:
            try:
                await self._link(self.pid)
            except Exception:
                await self.stop(now=True)
                raise
            ip_port = (peer, ip_port[1])
        self.log.info("gpumem: %s's server (pid %d) limited to %s bytes, %s cores, %d processes; private /tmp of %s",
                      self.user.name, self.pid, self.mem_limit, self.cpu_limit, self.pids_limit, self.tmp_size)
        return ip_port

    def hub_port(self):
        from urllib.parse import urlparse
        return urlparse(self.hub.api_url).port or 8081

    async def _run(self, *cmd):
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=30)
        if proc.returncode != 0:
            raise RuntimeError("gpumem: %s: %s" % (" ".join(cmd), out.decode(errors="replace").strip()))

    async def _link(self, pid):
        """Connects the server's network namespace to the host: a veth pair,
        the host end here, eth0 in the namespace, and a route to the hub's
        address through it. Nothing else is routed: the namespace reaches
        the host's end and the hub, no classmate's link."""
        host, peer, name = student_link(self._account_now()[0].pw_uid, self.uid_min)
        ns = ["nsenter", "-t", str(pid), "-n"]
        await self._run("sh", "-c", 'ip link del "$1" 2>/dev/null; true', "sh", name)
        await self._run("ip", "link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", str(pid))
        await self._run("ip", "addr", "add", host + "/30", "dev", name)
        await self._run("ip", "link", "set", name, "up")
        await self._run(*ns, "ip", "addr", "add", peer + "/30", "dev", "eth0")
        await self._run(*ns, "ip", "link", "set", "eth0", "up")
        await self._run(*ns, "ip", "route", "add", HUB_ADDRESS + "/32", "via", host)
        self.log.info("gpumem: %s's server in its own network namespace, at %s through %s", self.user.name, peer, name)

    async def stop(self, now=False):
        await super().stop(now=now)
        await self._kill_groups()
