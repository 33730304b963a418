# JupyterHub for a class on one machine: Debian's jupyterhub 3.0 package,
# configurable-http-proxy from npm (package.json here), one Jupyter server
# per student started as that student's Unix user, the course copied into the
# student's home on first login, and limits on each student's memory, CPU and
# processes enforced by the kernel's cgroups.
#
#   sudo bash deploy/hub/install.sh           once: packages, proxy, kernel, module cache
#   sudo jupyterhub -f deploy/hub/jupyterhub_config.py
#
# Settings come from the environment, so the file is used as it is:
#   GPUMEM_HUB_IP, GPUMEM_HUB_PORT    where the hub listens (127.0.0.1:8000)
#   GPUMEM_COURSE_DIR                 the course copied into homes (this repository)
#   GPUMEM_MEM_LIMIT                  memory per student (2G)
#   GPUMEM_CPU_LIMIT                  CPU cores per student (1.0)
#   GPUMEM_PIDS_LIMIT                 processes per student (512)
#   GPUMEM_GOMODCACHE                 the shared, read-only module cache (/var/lib/gpumem/gomod)
#   GPUMEM_HUB_STATE                  the hub's database and cookie secret (/var/lib/gpumem/hub)
#   GPUMEM_ADMIN_TOKEN_FILE           a file holding an admin API token (for scripts; optional)
#   GPUMEM_AUTHENTICATOR              "pam" (default: students log in with their Unix
#                                     password) or "dummy" (any password; tests only)
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpumem_spawner import CgroupSpawner  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
course_dir = os.path.abspath(os.environ.get("GPUMEM_COURSE_DIR", os.path.join(here, "..", "..")))
state_dir = os.environ.get("GPUMEM_HUB_STATE", "/var/lib/gpumem/hub")
os.makedirs(state_dir, mode=0o700, exist_ok=True)

c = get_config()  # noqa: F821 (provided by JupyterHub)

c.JupyterHub.ip = os.environ.get("GPUMEM_HUB_IP", "127.0.0.1")
c.JupyterHub.port = int(os.environ.get("GPUMEM_HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ.get("GPUMEM_HUB_API_PORT", "8081"))
c.ConfigurableHTTPProxy.command = [os.path.join(here, "node_modules", ".bin", "configurable-http-proxy")]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:%d" % int(os.environ.get("GPUMEM_PROXY_API_PORT", "8001"))
c.JupyterHub.db_url = "sqlite:///" + os.path.join(state_dir, "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(state_dir, "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = os.path.join(state_dir, "jupyterhub.pid")

if os.environ.get("GPUMEM_AUTHENTICATOR", "pam") == "dummy":
    c.JupyterHub.authenticator_class = "dummy"
else:
    c.JupyterHub.authenticator_class = "pam"
# Students are Unix users of this machine; the instructor creates them
# (useradd) and lists the admins here or through the admin page.
c.Authenticator.admin_users = set(filter(None, os.environ.get("GPUMEM_ADMINS", "").split(",")))

token_file = os.environ.get("GPUMEM_ADMIN_TOKEN_FILE")
if token_file:
    with open(token_file) as f:
        token = f.read().strip()
    c.JupyterHub.services = [{"name": "course-admin", "api_token": token}]
    c.JupyterHub.load_roles = [{"name": "course-admin", "scopes": ["admin:users", "admin:servers", "access:servers", "read:hub"],
                                "services": ["course-admin"]}]

c.JupyterHub.spawner_class = CgroupSpawner
c.CgroupSpawner.course_dir = course_dir
c.Spawner.mem_limit = os.environ.get("GPUMEM_MEM_LIMIT", "2G")
c.Spawner.cpu_limit = float(os.environ.get("GPUMEM_CPU_LIMIT", "1.0"))
c.CgroupSpawner.pids_limit = int(os.environ.get("GPUMEM_PIDS_LIMIT", "512"))
c.Spawner.notebook_dir = "~/course/notebooks"
c.Spawner.default_url = "/tree"
# A first start compiles gpukit into the student's build cache.
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
# The servers are offline: Go uses the shared module cache, filled once by
# install.sh, and never the network.
gomodcache = os.environ.get("GPUMEM_GOMODCACHE", "/var/lib/gpumem/gomod")
c.Spawner.environment = {
    "GOMODCACHE": gomodcache,
    "GOPROXY": "off",
    "GOSUMDB": "off",
    "GOTOOLCHAIN": "local",
    "PATH": os.path.join(course_dir, "bin") + ":/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin",
}
