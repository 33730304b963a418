#!/usr/bin/env bash
# install.sh prepares this machine for deploy/hub/jupyterhub_config.py, as
# root (the only step that needs the network):
#
#   bash deploy/hub/install.sh --admin NAME   a class: everything below, and the
#                                             hub's settings and systemd unit
#   bash deploy/hub/install.sh                the software and the student edition
#                                             only (test-hub.sh, or an update)
#
#   - Debian's jupyterhub package, and Jupyter through scripts/setup.sh;
#   - configurable-http-proxy from npm, at the version of package-lock.json;
#   - the student edition of the course (grader release: no solutions, no
#     hidden tests, nothing untracked) in GPUMEM_COURSE_DIR (default
#     /var/lib/gpumem/course), owned by root and readable by all, with GoNB,
#     goimports and gopls in its bin/ and the gonb kernel registered in its
#     share/jupyter (the hub points the servers' JUPYTER_PATH there);
#   - the shared module cache the students' servers read (GPUMEM_GOMODCACHE,
#     default /var/lib/gpumem/gomod), so they compile without the network;
#   - this checkout closed to other users (mode 700): it holds the solutions
#     and the hidden tests, and the hub runs its code as root;
#   - /etc/cron.allow and /etc/at.allow (root and the admin only: a
#     student's cron job would outlive their server and its limits);
#   - with --admin: the group students, /etc/gpumem/hub.env (the admin, the
#     settings of jupyterhub_config.py), the systemd unit gpumem-hub, and,
#     where OpenSSH's server is installed, DenyGroups students (a student
#     logged in by ssh would be outside every limit of the hub).
# It is idempotent: a second run installs nothing new and refreshes the
# student edition from the checkout's committed files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
course=$(cd "$here/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
gomodcache=${GPUMEM_GOMODCACHE:-/var/lib/gpumem/gomod}
edition=${GPUMEM_COURSE_DIR:-/var/lib/gpumem/course}
group=${GPUMEM_STUDENT_GROUP:-students}
etc=/etc/gpumem

say() { printf 'hub-install: %s\n' "$*"; }
die() {
	printf 'hub-install: %s\n' "$*" >&2
	exit 1
}
admin=
while [ $# -gt 0 ]; do
	case $1 in
	--admin)
		admin=${2:-}
		shift 2 || die "--admin needs a user name"
		;;
	*) die "usage: install.sh [--admin NAME]" ;;
	esac
done
[ "$(id -u)" -eq 0 ] || die "run as root: the hub starts each student's server as that student."
if [ -n "$admin" ]; then
	id "$admin" >/dev/null 2>&1 || die "--admin $admin: no such user on this machine (make it first: useradd -m -s /bin/bash $admin; passwd $admin)"
fi

if command -v jupyterhub >/dev/null 2>&1; then
	say "jupyterhub: present ($(jupyterhub --version))"
else
	say "jupyterhub: installing Debian's package"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends jupyterhub >/dev/null ||
		die "apt-get install jupyterhub failed"
fi

if [ -x "$here/node_modules/.bin/configurable-http-proxy" ]; then
	say "configurable-http-proxy: present ($("$here/node_modules/.bin/configurable-http-proxy" --version))"
else
	if ! command -v npm >/dev/null 2>&1; then
		say "npm: installing Debian's package"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm >/dev/null || die "apt-get install npm failed"
	fi
	say "configurable-http-proxy: npm ci (pinned in package-lock.json)"
	(cd "$here" && npm ci --no-audit --no-fund --omit=dev >/dev/null) || die "npm ci failed in $here"
fi

# The instructor's checkout: the tools are built here, then copied into the
# edition. Nothing in it is for students.
bash "$course/scripts/setup.sh"
chmod go-rwx "$course"
say "checkout: $course closed to other users (mode $(stat -c %a "$course"))"

# The student edition, made beside the old one and swapped in whole.
[ -d "$(dirname "$edition")" ] || install -d -m 755 "$(dirname "$edition")"
rm -rf "$edition.new" "$edition.old"
(cd "$course" && go run ./grader/cmd/grader release --out "$edition.new") | sed 's/^/hub-install: /' ||
	die "grader release failed"
for part in solutions grader/hidden; do
	[ ! -e "$edition.new/$part" ] || die "the student edition holds $part; not installing it"
done
mkdir "$edition.new/bin"
# Jupyter's configuration folder for the students' servers
# (JUPYTER_CONFIG_DIR): empty and root's, so that nothing in a student's
# ~/.jupyter is loaded; jupyter_core's "migrated" marker, read-only, tells it
# not to migrate an IPython 3 profile into it.
mkdir -p "$edition.new/etc/jupyter"
: >"$edition.new/etc/jupyter/migrated"
cp "$course"/bin/gonb "$course"/bin/goimports "$course"/bin/gopls "$edition.new/bin/"
[ -d "$edition" ] && mv "$edition" "$edition.old"
mv "$edition.new" "$edition"
rm -rf "$edition.old"
# The kernel, registered inside the edition (its bin/gonb); setup finds the
# tools present and the modules cached.
(cd "$edition" && JUPYTER_DATA_DIR="$edition/share/jupyter" bash scripts/setup.sh --no-apt) | sed 's/^/    /' ||
	die "registering the gonb kernel in $edition failed"
chown -R root:root "$edition"
chmod -R u+rwX,go+rX,go-w "$edition"
say "student edition: $edition ($(find "$edition" -type f | wc -l) files, no solutions/, no grader/hidden/)"

mkdir -p "$gomodcache"
(cd "$course" && GOMODCACHE=$gomodcache GOFLAGS=-modcacherw go mod download) ||
	die "filling the shared module cache $gomodcache failed (go env GOPROXY: $(go env GOPROXY))"
chmod -R a+rX,go-w "$gomodcache"
say "shared module cache: $gomodcache ($(du -sh "$gomodcache" | cut -f1))"

# cron and at: a student's job would run after their server stops, outside
# its cgroups and limits. Only root and the admin may schedule jobs; the
# crontabs students already have are removed. Other lines of existing
# allow files are kept.
for allow in /etc/cron.allow /etc/at.allow; do
	touch "$allow"
	chmod 644 "$allow"
	for u in root $admin; do
		grep -qxF "$u" "$allow" || echo "$u" >>"$allow"
	done
done
for s in $(getent group "$group" | cut -d: -f4 | tr ',' ' '); do
	rm -f "/var/spool/cron/crontabs/$s"
done
say "cron, at: only root${admin:+ and $admin} may schedule jobs (/etc/cron.allow, /etc/at.allow); students' crontabs removed"
if [ -z "$admin" ]; then
	say "software and student edition ready; for a class, run again with --admin NAME (docs/instructors.md)"
	exit 0
fi

getent group "$group" >/dev/null || groupadd "$group"
say "group $group: $(getent group "$group" | cut -d: -f4 | tr ',' ' ' | wc -w) members"
install -d -m 700 "$etc" # hub.env, and a TLS key if the hub serves TLS itself
chmod 700 "$etc"
if [ -f "$etc/hub.env" ]; then
	sed -i "s/^GPUMEM_ADMINS=.*/GPUMEM_ADMINS=$admin/" "$etc/hub.env"
else
	cat >"$etc/hub.env" <<EOF
# The class hub's settings (deploy/hub/jupyterhub_config.py lists them all).
# systemctl restart gpumem-hub after a change.
GPUMEM_ADMINS=$admin
GPUMEM_STUDENT_GROUP=$group
GPUMEM_COURSE_DIR=$edition
GPUMEM_GOMODCACHE=$gomodcache
GPUMEM_HUB_IP=127.0.0.1
GPUMEM_HUB_PORT=8000
#GPUMEM_SSL_CERT=/etc/gpumem/hub.crt
#GPUMEM_SSL_KEY=/etc/gpumem/hub.key
GPUMEM_MEM_LIMIT=2G
GPUMEM_CPU_LIMIT=1.0
GPUMEM_PIDS_LIMIT=512
GPUMEM_TMP_SIZE=1G
GPUMEM_IDLE_TIMEOUT=3600
# JupyterHub before 4.1 (Debian 12 has 3.0.0) lets a student's page act as
# an admin who opens it (CVE-2024-28233): the hub refuses to start there
# until you choose one (docs/instructors.md, "What an admin must never click"):
#GPUMEM_SUBDOMAIN_HOST=https://class.example.org
#GPUMEM_ACCEPT_CVE_2024_28233=1
EOF
fi
hubversion=$(/usr/bin/python3 -c 'import jupyterhub; print(jupyterhub.__version__)' 2>/dev/null || echo "?")
case $hubversion in
[0-3].* | 4.0.*)
	say "JupyterHub $hubversion predates the fix of CVE-2024-28233: the hub starts only once $etc/hub.env sets GPUMEM_SUBDOMAIN_HOST or GPUMEM_ACCEPT_CVE_2024_28233=1 (docs/instructors.md)"
	;;
esac
chmod 600 "$etc/hub.env"
install -d -m 700 /var/lib/gpumem/hub
say "settings: $etc/hub.env (admin: $admin)"
if [ -d /etc/ssh/sshd_config.d ]; then
	printf '# deploy/hub/install.sh: students work through the hub only, inside its limits.\nDenyGroups %s\n' "$group" >/etc/ssh/sshd_config.d/gpumem-students.conf
	say "ssh: members of $group may not log in by ssh (/etc/ssh/sshd_config.d/gpumem-students.conf; systemctl reload ssh)"
fi
sed "s|@HUB_DIR@|$here|g" "$here/gpumem-hub.service" >/etc/systemd/system/gpumem-hub.service.new
mv /etc/systemd/system/gpumem-hub.service.new /etc/systemd/system/gpumem-hub.service
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload
	say "ready: systemctl enable --now gpumem-hub"
else
	say "systemd is not running here: start the hub with: (set -a; . $etc/hub.env; jupyterhub -f $here/jupyterhub_config.py)"
fi
