"""CgroupSpawner: JupyterHub's LocalProcessSpawner with per-student limits.

Each student's server, and everything it starts (kernels, go build, the
programs of the cells), runs in its own cgroup, whose limits the Linux
kernel enforces: memory (the OOM killer acts inside the student's group
only, so the hub and the other students are untouched), CPU time (a quota of
cpu_limit cores) and the number of processes. The hub runs as root and makes
the group; the server is moved into it as soon as it is started, before it
has started anything else. Both cgroup v1 (memory, cpu, pids hierarchies)
and cgroup v2 (a unified hierarchy) are handled. On a host run by systemd,
start the hub in a unit with Delegate=yes so the groups are its own.

On first start the course is copied into the student's home (~/course),
owned by the student; it is never overwritten afterwards, so their work is
kept.
"""

import os
import pwd
import shutil

from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Integer, Unicode

CGROUP_ROOT = "/sys/fs/cgroup"
GROUP = "gpumem-hub"
CFS_PERIOD_US = 100000


def _write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


class CgroupSpawner(LocalProcessSpawner):
    course_dir = Unicode(help="the course folder copied into each student's home on first start").tag(config=True)
    pids_limit = Integer(512, help="the most processes a student's server may run").tag(config=True)

    def _student(self):
        return pwd.getpwnam(self.user.name)

    def _copy_course(self):
        student = self._student()
        target = os.path.join(student.pw_dir, "course")
        if os.path.exists(target) or not self.course_dir:
            return
        staging = os.path.join(student.pw_dir, ".course.copying")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(self.course_dir, staging, symlinks=True,
                        ignore=shutil.ignore_patterns(".git", "bin", "node_modules", ".ipynb_checkpoints"))
        for folder, dirs, files in os.walk(staging):
            for name in [folder] + [os.path.join(folder, n) for n in dirs + files]:
                os.lchown(name, student.pw_uid, student.pw_gid)
        # The rename makes the copy appear whole or not at all.
        os.rename(staging, target)
        self.log.info("gpumem: copied the course into %s", target)

    def _groups(self):
        """The cgroup folders of this student, one per hierarchy."""
        name = "student-" + self.user.name
        if os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers")):
            return {"v2": os.path.join(CGROUP_ROOT, GROUP, name)}
        return {c: os.path.join(CGROUP_ROOT, c, GROUP, name) for c in ("memory", "cpu", "pids")}

    def _make_groups(self):
        groups = self._groups()
        if "v2" in groups:
            parent = os.path.dirname(groups["v2"])
            os.makedirs(parent, exist_ok=True)
            _write(os.path.join(parent, "cgroup.subtree_control"), "+memory +cpu +pids")
            os.makedirs(groups["v2"], exist_ok=True)
            g = groups["v2"]
            if self.mem_limit:
                _write(os.path.join(g, "memory.max"), self.mem_limit)
                _write(os.path.join(g, "memory.swap.max"), 0)
            if self.cpu_limit:
                _write(os.path.join(g, "cpu.max"), "%d %d" % (int(self.cpu_limit * CFS_PERIOD_US), CFS_PERIOD_US))
            _write(os.path.join(g, "pids.max"), self.pids_limit)
            return [g]
        for g in groups.values():
            os.makedirs(g, exist_ok=True)
        if self.mem_limit:
            _write(os.path.join(groups["memory"], "memory.limit_in_bytes"), self.mem_limit)
            swap = os.path.join(groups["memory"], "memory.memsw.limit_in_bytes")
            if os.path.exists(swap):
                _write(swap, self.mem_limit)
        if self.cpu_limit:
            _write(os.path.join(groups["cpu"], "cpu.cfs_period_us"), CFS_PERIOD_US)
            _write(os.path.join(groups["cpu"], "cpu.cfs_quota_us"), int(self.cpu_limit * CFS_PERIOD_US))
        _write(os.path.join(groups["pids"], "pids.max"), self.pids_limit)
        return list(groups.values())

    async def start(self):
        self._copy_course()
        groups = self._make_groups()
        ip_port = await super().start()
        for g in groups:
            _write(os.path.join(g, "cgroup.procs"), self.pid)
        self.log.info("gpumem: %s's server (pid %d) limited to %s bytes, %s cores, %d processes",
                      self.user.name, self.pid, self.mem_limit, self.cpu_limit, self.pids_limit)
        return ip_port
