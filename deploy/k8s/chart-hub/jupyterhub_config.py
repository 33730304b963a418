"""The hub of the chart test (deploy/k8s/test-chart-hub.sh).

It reads deploy/k8s/values.yaml and configures JupyterHub the way the Zero
to JupyterHub chart does with it: singleuser.* becomes KubeSpawner's traits
(here those of the stand-in in podman_kubespawner.py), and hub.config is
applied last, key by key, onto the classes it names. Only what the chart
needs a cluster for differs: the proxy runs beside the hub, and the
servers are podman containers on the host's network.

Environment: GPUMEM_VALUES (values.yaml), GPUMEM_STATE (a writable folder),
GPUMEM_ADMIN_TOKEN (a token for the test's API calls), GPUMEM_HUB_PORT.
"""

import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

with open(os.environ["GPUMEM_VALUES"]) as f:
    values = yaml.safe_load(f)
singleuser = values["singleuser"]

# What the chart's own jupyterhub_config.py sets from singleuser.*.
c.JupyterHub.spawner_class = "podman_kubespawner.KubeSpawner"
c.KubeSpawner.image = "%s:%s" % (singleuser["image"]["name"], singleuser["image"]["tag"])
c.KubeSpawner.cmd = singleuser["cmd"] if isinstance(singleuser["cmd"], list) else [singleuser["cmd"]]
c.KubeSpawner.default_url = singleuser["defaultUrl"]
c.KubeSpawner.uid = singleuser["uid"]
c.KubeSpawner.fs_gid = singleuser["fsGid"]
c.KubeSpawner.mem_limit = singleuser["memory"]["limit"]
c.KubeSpawner.mem_guarantee = singleuser["memory"]["guarantee"]
c.KubeSpawner.cpu_limit = float(singleuser["cpu"]["limit"])
c.KubeSpawner.cpu_guarantee = float(singleuser["cpu"]["guarantee"])
c.KubeSpawner.environment = singleuser.get("extraEnv", {})
c.KubeSpawner.init_containers = singleuser.get("initContainers", [])
c.KubeSpawner.home_mount_path = singleuser["storage"]["homeMountPath"]
c.KubeSpawner.start_timeout = 300  # the chart's default singleuser.startTimeout
c.KubeSpawner.http_timeout = 120

# hub.config last: the chart applies each key onto the class it names.
for section, traits in values["hub"]["config"].items():
    for name, value in traits.items():
        setattr(getattr(c, section), name, value)

state = os.environ["GPUMEM_STATE"]
port = int(os.environ.get("GPUMEM_HUB_PORT", "18100"))
c.JupyterHub.bind_url = "http://127.0.0.1:%d" % port
c.JupyterHub.hub_bind_url = "http://127.0.0.1:%d" % (port + 81)
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:%d" % (port + 1)
c.JupyterHub.db_url = "sqlite:///" + os.path.join(state, "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(state, "cookie_secret")
c.ConfigurableHTTPProxy.pid_file = os.path.join(state, "proxy.pid")
c.JupyterHub.pid_file = os.path.join(state, "hub.pid")
c.JupyterHub.cleanup_servers = True
c.JupyterHub.tornado_settings = {"slow_spawn_timeout": 0}
c.JupyterHub.services = [{"name": "chart-test", "api_token": os.environ["GPUMEM_ADMIN_TOKEN"]}]
c.JupyterHub.load_roles = [{"name": "chart-test", "services": ["chart-test"],
                            "scopes": ["admin:users", "admin:servers", "access:servers", "read:hub"]}]
