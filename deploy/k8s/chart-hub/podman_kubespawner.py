"""KubeSpawner's stand-in for the chart test (deploy/k8s/test-chart-hub.sh).

The chart's hub runs kubespawner.KubeSpawner, which asks Kubernetes for one
pod per student. No cluster is reachable here, so this class keeps the
traits of KubeSpawner that deploy/k8s/values.yaml sets (the chart turns
singleuser.* into them) and hands each start to launcher.py on the host,
which runs the pod's containers with podman: the init containers, then the
server with the student's persistent volume, uid, fs_gid, memory and CPU
limits. What the hub sends the server (its command, and the environment
that carries the API token, the OAuth client and the URLs) is built by
JupyterHub's own Spawner, as with KubeSpawner; so the test checks the hub
of the chart's JupyterHub version against the image's jupyterhub-singleuser.
"""

import asyncio
import json
import os

from jupyterhub.spawner import Spawner
from jupyterhub.utils import random_port
from traitlets import Integer, List, Unicode, default


class KubeSpawner(Spawner):
    spawn_dir = Unicode("/spawn", help="the folder shared with launcher.py").tag(config=True)
    uid = Integer(1000).tag(config=True)
    fs_gid = Integer(100).tag(config=True)
    init_containers = List().tag(config=True)
    home_mount_path = Unicode("/home/jovyan").tag(config=True)
    image = Unicode().tag(config=True)
    port = Integer(8888).tag(config=True)

    @default("env_keep")
    def _env_keep_default(self):
        # As KubeSpawner: the hub's own environment (its PATH, its locale)
        # is not the server's; the image sets those.
        return []

    def _marker(self, suffix):
        return os.path.join(self.spawn_dir, self.user.name + suffix)

    def _clear(self, *suffixes):
        for s in suffixes:
            try:
                os.remove(self._marker(s))
            except FileNotFoundError:
                pass

    async def start(self):
        # Servers share the host's network here, so each needs its own port
        # (in a cluster each pod has its own address and uses 8888).
        self.ip = "127.0.0.1"
        self.port = random_port()
        self._clear(".started", ".failed", ".exit", ".stopped")
        request = {
            "cmd": self.cmd + self.get_args(),
            "env": self.get_env(),
            "uid": self.uid,
            "fs_gid": self.fs_gid,
            "mem_limit": str(self.mem_limit or 0),
            "cpu_limit": self.cpu_limit or 0,
            "home_mount": self.home_mount_path,
            "init": [{"command": ic["command"], "uid": ic.get("securityContext", {}).get("runAsUser", self.uid)}
                     for ic in self.init_containers],
        }
        tmp = self._marker(".start.json.tmp")
        with open(tmp, "w") as f:
            json.dump(request, f)
        os.rename(tmp, self._marker(".start.json"))
        for _ in range(int(self.start_timeout / 0.2)):
            if os.path.exists(self._marker(".started")):
                return (self.ip, self.port)
            if os.path.exists(self._marker(".failed")):
                with open(self._marker(".failed")) as f:
                    raise RuntimeError("launcher: " + f.read())
            await asyncio.sleep(0.2)
        raise TimeoutError("launcher did not start the server in %ds" % self.start_timeout)

    async def poll(self):
        if os.path.exists(self._marker(".exit")):
            with open(self._marker(".exit")) as f:
                return int(f.read().strip() or 1)
        if os.path.exists(self._marker(".started")):
            return None
        return 0

    async def stop(self, now=False):
        self._clear(".stopped")
        with open(self._marker(".stop"), "w"):
            pass
        for _ in range(300):
            if os.path.exists(self._marker(".stopped")):
                break
            await asyncio.sleep(0.2)
        self._clear(".started", ".exit", ".stopped")
