#!/usr/bin/env bash
# install.sh prepares this machine for deploy/hub/jupyterhub_config.py, once,
# as root (the only step that needs the network):
#   - Debian's jupyterhub package, and Jupyter through scripts/setup.sh;
#   - configurable-http-proxy from npm, at the version of package-lock.json;
#   - GoNB, goimports and gopls in the course's bin/, and the gonb kernel
#     registered for every user (/usr/local/share/jupyter);
#   - the shared module cache the students' servers read (GPUMEM_GOMODCACHE,
#     default /var/lib/gpumem/gomod), so they compile without the network.
# It is idempotent: a second run installs nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
course=$(cd "$here/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
gomodcache=${GPUMEM_GOMODCACHE:-/var/lib/gpumem/gomod}

say() { printf 'hub-install: %s\n' "$*"; }
die() {
	printf 'hub-install: %s\n' "$*" >&2
	exit 1
}
[ "$(id -u)" -eq 0 ] || die "run as root: the hub starts each student's server as that student."

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
	command -v npm >/dev/null 2>&1 || die "npm not found: apt-get install -y npm"
	say "configurable-http-proxy: npm ci (pinned in package-lock.json)"
	(cd "$here" && npm ci --no-audit --no-fund --omit=dev >/dev/null) || die "npm ci failed in $here"
fi

JUPYTER_DATA_DIR=/usr/local/share/jupyter bash "$course/scripts/setup.sh"

# Students run the course's tools and read its files: every folder above it
# must be open to them.
dir=$course
while [ "$dir" != / ]; do
	[ "$(($(stat -c %a "$dir" | sed 's/^.*\(.\)$/\1/') & 1))" = 1 ] ||
		die "$dir is closed to other users (mode $(stat -c %a "$dir")); students could not run $course/bin/gonb. Move the course, or chmod o+x $dir."
	dir=$(dirname "$dir")
done

mkdir -p "$gomodcache"
(cd "$course" && GOMODCACHE=$gomodcache GOFLAGS=-modcacherw go mod download) ||
	die "filling the shared module cache $gomodcache failed (go env GOPROXY: $(go env GOPROXY))"
chmod -R a+rX "$gomodcache"
say "shared module cache: $gomodcache ($(du -sh "$gomodcache" | cut -f1))"
say "ready: sudo jupyterhub -f $here/jupyterhub_config.py"
