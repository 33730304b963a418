# JupyterHub for a class on one machine: Debian's jupyterhub 3.0 package,
# configurable-http-proxy from npm (package.json here), one Jupyter server
# per student started as that student's Unix user, the student edition of
# the course copied into the student's home on first login, and limits on
# each student's memory, CPU and processes enforced by the kernel's cgroups.
# docs/instructors.md section 3 is the recipe; in short, as root:
#
#   bash deploy/hub/install.sh --admin NAME   once: packages, proxy, kernel, module cache,
#                                             student edition, systemd unit
#   bash deploy/hub/add-students.sh roster.txt
#   systemctl start gpumem-hub                (or: jupyterhub -f deploy/hub/jupyterhub_config.py)
#
# Settings come from the environment (install.sh writes /etc/gpumem/hub.env,
# which the systemd unit reads), so this file is used as it is:
#   GPUMEM_HUB_IP, GPUMEM_HUB_PORT    where the hub listens (127.0.0.1:8000); any other
#                                     address needs TLS: GPUMEM_SSL_CERT and GPUMEM_SSL_KEY,
#                                     or a front end (nginx, caddy) on 127.0.0.1
#   GPUMEM_SSL_CERT, GPUMEM_SSL_KEY   the hub's own TLS certificate and key (optional)
#   GPUMEM_ADMINS                     the admins' user names, comma-separated
#   GPUMEM_STUDENT_GROUP              the Unix group allowed to log in (students)
#   GPUMEM_COURSE_DIR                 the student edition copied into homes (/var/lib/gpumem/course)
#   GPUMEM_MEM_LIMIT                  memory per student (2G)
#   GPUMEM_CPU_LIMIT                  CPU cores per student (1.0)
#   GPUMEM_PIDS_LIMIT                 processes per student (512)
#   GPUMEM_TMP_SIZE                   each server's private /tmp, /var/tmp and /dev/shm (1G each)
#   GPUMEM_DISK_LIMIT                 a disk quota on each home (unset: none; needs user quotas
#                                     on the homes' filesystem, or no server starts)
#   GPUMEM_INODE_LIMIT                files and folders per student with GPUMEM_DISK_LIMIT (one per
#                                     8 KiB of it, at least 50,000)
#   GPUMEM_IDLE_TIMEOUT               seconds before an idle server is stopped (3600; 0: never)
#   GPUMEM_CGROUP                     the cgroup holding the students' (default: gpumem_spawner.py)
#   GPUMEM_GOMODCACHE                 the shared, read-only module cache (/var/lib/gpumem/gomod)
#   GPUMEM_NETNS                      0: the servers share the host's network (default 1: each its own
#                                     namespace, reached through its own veth link; needs root)
#   GPUMEM_HUB_STATE                  the hub's database, cookie secret and pid files (/var/lib/gpumem/hub)
#   GPUMEM_ADMIN_TOKEN_FILE           a file holding an admin API token (for scripts; optional)
import importlib.util
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpumem_auth import ClassAuthenticator  # noqa: E402
from gpumem_spawner import CgroupSpawner  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
course_dir = os.environ.get("GPUMEM_COURSE_DIR", "/var/lib/gpumem/course")
state_dir = os.environ.get("GPUMEM_HUB_STATE", "/var/lib/gpumem/hub")
os.makedirs(state_dir, mode=0o700, exist_ok=True)

c = get_config()  # noqa: F821 (provided by JupyterHub)

# Where the hub listens. Students type their Unix password into the login
# page: anywhere but loopback it must travel over TLS, either the hub's own
# (a certificate and key) or a front end's (nginx or caddy on port 443,
# forwarding to 127.0.0.1:8000); without either the hub refuses to start.
c.JupyterHub.ip = os.environ.get("GPUMEM_HUB_IP", "127.0.0.1")
c.JupyterHub.port = int(os.environ.get("GPUMEM_HUB_PORT", "8000"))
ssl_cert, ssl_key = os.environ.get("GPUMEM_SSL_CERT"), os.environ.get("GPUMEM_SSL_KEY")
if ssl_cert or ssl_key:
    c.JupyterHub.ssl_cert, c.JupyterHub.ssl_key = ssl_cert, ssl_key
elif c.JupyterHub.ip not in ("127.0.0.1", "localhost", "::1"):
    sys.exit("gpumem: the hub would listen on %s without TLS, and passwords would cross the network in clear: "
             "set GPUMEM_SSL_CERT and GPUMEM_SSL_KEY, or keep 127.0.0.1 behind a TLS front end (docs/instructors.md)"
             % c.JupyterHub.ip)
c.JupyterHub.hub_port = int(os.environ.get("GPUMEM_HUB_API_PORT", "8081"))
# A student's server is the student's own process. On the hub's origin, a
# page it serves runs in the browser of an admin who opens it, with the
# admin's cookie, and JupyterHub before 4.1.0 lets such a page create an API
# token for the admin (CVE-2024-28233; Debian 12 ships 3.0.0, Debian 13 5.2).
# Each server on its own subdomain (GPUMEM_SUBDOMAIN_HOST, like
# https://class.example.org: needs a wildcard DNS name and certificate) puts
# it on another origin. Without either, the hub starts only when the
# instructor accepts the risk by name: admins must then never open a
# student's server (docs/instructors.md).
subdomain_host = os.environ.get("GPUMEM_SUBDOMAIN_HOST", "")
if subdomain_host:
    c.JupyterHub.subdomain_host = subdomain_host


def jupyterhub_fixed(version):
    """Whether a JupyterHub version has the fix of CVE-2024-28233 (4.1.0)."""
    parts = []
    for p in version.split(".")[:2]:
        digits = "".join(ch for ch in p if ch.isdigit()) or "0"
        parts.append(int(digits))
    return tuple(parts) >= (4, 1)


try:
    from jupyterhub import __version__ as jupyterhub_version
except ImportError:  # the tests load this file without JupyterHub's package
    jupyterhub_version = os.environ.get("GPUMEM_TEST_JUPYTERHUB_VERSION", "0")
if not subdomain_host and not jupyterhub_fixed(jupyterhub_version):
    if os.environ.get("GPUMEM_ACCEPT_CVE_2024_28233") != "1":
        sys.exit("gpumem: JupyterHub %s lets a student's page act as an admin who opens it (CVE-2024-28233, fixed in 4.1.0): "
                 "install the hub on Debian 13 (JupyterHub 5.2), or serve each server on its own subdomain "
                 "(GPUMEM_SUBDOMAIN_HOST), or set GPUMEM_ACCEPT_CVE_2024_28233=1 in /etc/gpumem/hub.env and never open "
                 "a student's server as an admin (docs/instructors.md)" % jupyterhub_version)
    print("gpumem hub: JupyterHub %s: CVE-2024-28233 accepted (GPUMEM_ACCEPT_CVE_2024_28233=1): admins must never "
          "open a student's server" % jupyterhub_version, file=sys.stderr)
# Each student's server runs in its own network namespace (gpumem_spawner,
# GPUMEM_NETNS=0 turns that off): it reaches the hub's API at an address of
# the host's loopback, HUB_ADDRESS, routed through its own link, and nothing
# else of the host's loopback.
netns = os.environ.get("GPUMEM_NETNS", "1") != "0"
if netns:
    import subprocess
    from gpumem_spawner import HUB_ADDRESS
    have = subprocess.run(["ip", "-o", "addr", "show", "dev", "lo"], capture_output=True, text=True)
    if " %s/32 " % HUB_ADDRESS not in have.stdout:
        added = subprocess.run(["ip", "addr", "add", HUB_ADDRESS + "/32", "dev", "lo"], capture_output=True, text=True)
        if added.returncode != 0:
            sys.exit("gpumem: cannot add the hub's address %s to lo (%s): run the hub as root, or GPUMEM_NETNS=0"
                     % (HUB_ADDRESS, added.stderr.strip()))
    c.JupyterHub.hub_ip = HUB_ADDRESS
else:
    c.JupyterHub.hub_ip = "127.0.0.1"
c.ConfigurableHTTPProxy.command = [os.path.join(here, "node_modules", ".bin", "configurable-http-proxy")]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:%d" % int(os.environ.get("GPUMEM_PROXY_API_PORT", "8001"))
# Every file the hub writes stays in its own 0700 state folder, never in
# the course or the working folder.
c.JupyterHub.db_url = "sqlite:///" + os.path.join(state_dir, "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(state_dir, "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = os.path.join(state_dir, "jupyterhub.pid")
c.ConfigurableHTTPProxy.pid_file = os.path.join(state_dir, "jupyterhub-proxy.pid")

# Students are Unix users of this machine in the group students (made by
# deploy/hub/add-students.sh); they log in with their Unix password. Other
# accounts are refused, except the admins named at install.
c.JupyterHub.authenticator_class = ClassAuthenticator
c.ClassAuthenticator.allowed_groups = {os.environ.get("GPUMEM_STUDENT_GROUP", "students")}
c.Authenticator.admin_users = set(filter(None, os.environ.get("GPUMEM_ADMINS", "").split(",")))
# No PAM session for the servers: pam_systemd would move the hub into a
# login session's cgroup, out of the unit systemd delegated to it.
c.PAMAuthenticator.open_sessions = False

services, roles = [], []
token_file = os.environ.get("GPUMEM_ADMIN_TOKEN_FILE")
if token_file:
    with open(token_file) as f:
        token = f.read().strip()
    services.append({"name": "course-admin", "api_token": token})
    roles.append({"name": "course-admin", "scopes": ["admin:users", "admin:servers", "access:servers", "read:hub"],
                  "services": ["course-admin"]})
# Idle servers are stopped (their homes stay), so a forgotten tab does not
# hold a student's memory and processes all night.
idle_timeout = int(os.environ.get("GPUMEM_IDLE_TIMEOUT", "3600"))
if idle_timeout > 0:
    # As the hub's own user: its token, in its environment, stays out of
    # reach of any other account (a service run as nobody shares its uid
    # with every other daemon run as nobody).
    services.append({"name": "idle-culler",
                     "command": ["/usr/bin/python3", os.path.join(here, "idle_culler.py"), str(idle_timeout)]})
    roles.append({"name": "idle-culler", "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
                  "services": ["idle-culler"]})
c.JupyterHub.services = services
c.JupyterHub.load_roles = roles

c.JupyterHub.spawner_class = CgroupSpawner


def landing_page(handler):
    """Where the hub's / and a login lead. Admins go to the admin page:
    they get no server (the spawner serves students only), and must not
    land on a student's (docs/instructors.md, what an admin must never
    click). Students go to their server, started if need be, as the hub's
    default does."""
    from jupyterhub.utils import url_path_join
    user = handler.current_user
    if user is None:
        return handler.settings["login_url"]
    if user.admin:
        return url_path_join(handler.hub.base_url, "admin")
    if user.spawner.active:
        return user.url
    return url_path_join(handler.hub.base_url, "spawn")


c.JupyterHub.default_url = landing_page
c.CgroupSpawner.course_dir = course_dir
c.CgroupSpawner.student_group = os.environ.get("GPUMEM_STUDENT_GROUP", "students")
c.CgroupSpawner.network_namespace = netns
c.CgroupSpawner.cgroup_parent = os.environ.get("GPUMEM_CGROUP", "")
c.CgroupSpawner.tmp_size = os.environ.get("GPUMEM_TMP_SIZE", "1G")
c.CgroupSpawner.disk_limit = os.environ.get("GPUMEM_DISK_LIMIT") or None
c.CgroupSpawner.inode_limit = int(os.environ.get("GPUMEM_INODE_LIMIT", "0"))
c.Spawner.mem_limit = os.environ.get("GPUMEM_MEM_LIMIT", "2G")
c.Spawner.cpu_limit = float(os.environ.get("GPUMEM_CPU_LIMIT", "1.0"))
c.CgroupSpawner.pids_limit = int(os.environ.get("GPUMEM_PIDS_LIMIT", "512"))
c.Spawner.notebook_dir = "~/course/notebooks"
# Notebooks trusted in a student's own signature database would run their
# script output on the hub's origin when an admin opens them: the server
# keeps its signatures in memory, for the session only.
c.Spawner.args = ["--NotebookNotary.db_file=:memory:"]
# JupyterLab where the servers' Python has it (Debian 13: apt-get install
# jupyterlab), else the classic Notebook (Debian 12 packages no JupyterLab),
# and the hub's log says so when it starts.
if importlib.util.find_spec("jupyterlab"):
    c.Spawner.default_url = "/lab"
else:
    c.Spawner.default_url = "/tree"
    print("gpumem hub: JupyterLab is not installed (Debian 12 has no package for it): "
          "students' servers open the classic Notebook at /tree", file=sys.stderr)
# A first start compiles gpukit into the student's build cache.
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
# The servers are offline: Go uses the shared module cache, filled once by
# install.sh, and never the network. The tools (gonb, gopls) are the
# student edition's, never the instructor's checkout.
gomodcache = os.environ.get("GPUMEM_GOMODCACHE", "/var/lib/gpumem/gomod")
c.Spawner.environment = {
    "GOMODCACHE": gomodcache,
    "GOPROXY": "off",
    "GOSUMDB": "off",
    "GOTOOLCHAIN": "local",
    "PATH": os.path.join(course_dir, "bin") + ":/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin",
    "JUPYTER_PATH": os.path.join(course_dir, "share", "jupyter"),
    # Configuration from the edition's root-owned etc/jupyter only (made by
    # install.sh): nothing in ~/.jupyter (custom.js, templates, config
    # files) reaches the pages the server serves on the hub's origin, and
    # Python skips the student's ~/.local site-packages (a .pth file there
    # would run in the server itself).
    "JUPYTER_CONFIG_DIR": os.path.join(course_dir, "etc", "jupyter"),
    "PYTHONNOUSERSITE": "1",
    # Go gives a server whose CPU quota is 1 core two Ps (it rounds the
    # quota up, to at least 2): gpukit's kernel helpers must not spend the
    # quota waiting awake for more work (gpukit/kernels/README.md).
    "GPUKIT_SPIN": "0",
}
