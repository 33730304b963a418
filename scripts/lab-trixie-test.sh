#!/usr/bin/env bash
# lab-trixie-test.sh checks the README's first command on a fresh Debian 13
# (trixie) system, as root: a container of the minimal trixie that the image
# build starts from (scripts/debian-image.sh), with this machine's Go 1.26 at
# /usr/local/go (the README's prerequisite, mounted read-only) and a copy of
# this working tree (its tracked and untracked files, not what git ignores:
# no bin/, no build outputs). In it, `apt-get install make` (the one tool
# minimal Debian lacks), then `make lab`, which installs JupyterLab and the
# rest with apt, builds GoNB and starts JupyterLab. From this machine:
#
#   - `make lab` says it starts JupyterLab, and JupyterLab answers on /lab;
#   - the server's start page (/) redirects to /lab/tree/notebooks, the
#     lesson list, and the contents API lists the lessons' notebooks there;
#   - the gonb kernel is registered (/api/kernelspecs) and runs the welcome
#     lesson's first two cells (deploy/hub/run_cell.py: gpukit's default
#     device).
#
# It needs the network (Debian's mirror, the Go module proxy: this machine's
# `go env GOPROXY`), podman and debootstrap, and takes several minutes (apt
# installs about 275 packages); `make lab-trixie-test` runs it, CI does not.
# Environment: PORT (default 18890, on this machine's loopback: the
# container shares its network), DEBIAN_MIRROR (as scripts/debian-image.sh).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
port=${PORT:-18890}
name=gpumem-lab-trixie-$$
failed=0
start=$(date +%s)

ok() { printf 'lab-trixie-test: ok    %s\n' "$*"; }
bad() {
	printf 'lab-trixie-test: FAIL  %s\n' "$*"
	failed=1
}
say() { printf 'lab-trixie-test: %s\n' "$*"; }
die() {
	printf 'lab-trixie-test: %s\n' "$*" >&2
	exit 1
}
[ "$(id -u)" -eq 0 ] || die "run as root (podman and debootstrap need it)."
for tool in podman debootstrap git; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found: apt-get install -y podman runc debootstrap git"
done
[ -x /usr/local/go/bin/go ] || die "no Go at /usr/local/go (the README's prerequisite, mounted into the container)."
if (: </dev/tcp/127.0.0.1/"$port") 2>/dev/null; then
	die "port $port on 127.0.0.1 is in use (PORT=... to choose another)."
fi

# shellcheck source=scripts/debian-image.sh disable=SC1091
. scripts/debian-image.sh # sets debian_image_tag
debian_image gpumem-base trixie
base=${debian_image_tag:?}

work=$(mktemp -d /var/tmp/gpumem-lab-trixie.XXXXXX)
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	podman rm -f -t 2 "$name" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/course"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
	[ -e "$f" ] && printf '%s\0' "$f" # (not a tracked file deleted here)
done | tar --null -T - -c | tar -C "$work/course" -x || die "copying the working tree failed."
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')

# The README's first command, as root on the fresh system, after the
# prerequisites it names (Go on PATH) and make.
podman run -d --name "$name" --runtime runc --ulimit nofile=16384:16384 --ulimit nproc=16384:16384 \
	--network host -v /usr/local/go:/usr/local/go:ro -v "$work/course:/root/course" \
	-e PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	-e GOPROXY="$(/usr/local/go/bin/go env GOPROXY)" -e JUPYTER_TOKEN="$token" -e HOME=/root \
	"$base" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends make >/dev/null &&
		cd /root/course && exec make lab PORT=$port" >/dev/null || die "the container did not start."

url=http://127.0.0.1:$port
get() { # get PATH: prints the final URL's path, then the body; fails on an HTTP error
	/usr/bin/python3 - "$url" "$1" "$token" <<'PY'
import sys, urllib.parse, urllib.request
base, path, token = sys.argv[1:]
req = urllib.request.Request(base + path, headers={"Authorization": "token " + token})
with urllib.request.urlopen(req, timeout=30) as r:
    print(urllib.parse.urlparse(r.geturl()).path)
    print(r.read().decode(errors="replace"))
PY
}
say "a fresh trixie ($base): apt-get install make, then make lab (apt, GoNB's build, the module cache)..."
up=
for _ in $(seq 900); do
	[ "$(podman inspect --format '{{.State.Running}}' "$name" 2>/dev/null)" = true ] || break
	get /api/status >/dev/null 2>&1 && up=1 && break
	sleep 1
done
if [ -z "$up" ]; then
	bad "JupyterLab did not answer on $url; make lab's output ends with:"
	podman logs "$name" 2>&1 | tail -n 30 | sed 's/^/    /'
	exit 1
fi
log=$(podman logs "$name" 2>&1)
said=$(grep -m1 '^lab: ' <<<"$log")
if [[ $said == "lab: starting JupyterLab"* ]]; then
	ok "make lab answered in $(($(date +%s) - start)) s and said: $said"
else
	bad "make lab did not say it starts JupyterLab: ${said:-(no lab: line)}"
fi
installed=$(grep -m1 '^setup: jupyter: installing' <<<"$log")
if [[ $installed == "setup: jupyter: installing jupyterlab "* ]]; then
	ok "setup installed Debian's packages: ${installed#setup: jupyter: installing }"
else
	bad "setup did not install jupyterlab: $(grep -m1 '^setup: jupyter' <<<"$log")"
fi

page=$(get /lab 2>&1)
app=$(tail -n +2 <<<"$page" | /usr/bin/python3 -c 'import sys; sys.path.insert(0, "deploy/hub"); from login import served_app; print(served_app(sys.stdin.read()) or "")')
case $app in
"JupyterLab "*) ok "$app answers on /lab" ;;
*) bad "/lab does not serve JupyterLab: $(head -c 300 <<<"$page")" ;;
esac
landing=$(get / 2>&1 | head -n 1)
if [ "$landing" = /lab/tree/notebooks ]; then
	ok "the start page / opens $landing, the lesson list"
else
	bad "the start page / lands on $landing, want /lab/tree/notebooks"
fi
notebooks=$(get /api/contents/notebooks 2>/dev/null | tail -n +2 | /usr/bin/python3 -c \
	'import json, sys; print(" ".join(sorted(e["name"] for e in json.load(sys.stdin)["content"] if e["name"].endswith(".ipynb"))))' 2>/dev/null)
want=$(find notebooks -maxdepth 1 -name '*.ipynb' -printf '%f\n' | sort | tr '\n' ' ')
if [ -n "$notebooks" ] && [ "$notebooks " = "$want" ]; then
	ok "the lesson list holds the $(wc -w <<<"$notebooks") notebooks"
else
	bad "notebooks/ in JupyterLab lists '$notebooks', want '$want'"
fi
specs=$(get /api/kernelspecs 2>/dev/null | tail -n +2)
if /usr/bin/python3 -c 'import json, sys; sys.exit(0 if "gonb" in json.load(sys.stdin)["kernelspecs"] else 1)' <<<"$specs" 2>/dev/null; then
	ok "the gonb kernel is registered"
else
	bad "no gonb kernelspec: $(head -c 300 <<<"$specs")"
fi

t0=$(date +%s)
if out=$(timeout 600 /usr/bin/python3 deploy/hub/run_cell.py "$url/" "$token" notebooks/00-welcome.ipynb lessons/00-welcome.md#1 lessons/00-welcome.md#2 2>&1) &&
	grep -q 'device: *sim:0' <<<"$out"; then
	ok "the gonb kernel ran the welcome lesson's first cells in $(($(date +%s) - t0)) s ($(grep -m1 'device:' <<<"$out" | tr -s ' '))"
else
	bad "the welcome lesson's first cells failed in the gonb kernel:"
	tail -n 20 <<<"$out" | sed 's/^/    /'
fi
say "finished in $(($(date +%s) - start)) s"
exit "$failed"
