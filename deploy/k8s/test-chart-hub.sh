#!/usr/bin/env bash
# test-chart-hub.sh checks deploy/k8s/values.yaml and the classroom image
# against the JupyterHub that the Zero to JupyterHub chart 4.x runs (5.x),
# without a cluster. The image's jupyterhub-singleuser is Debian trixie's
# 5.2, serving JupyterLab; this is the test that they work together, as root:
#
#   1. a hub image: Debian trixie's JupyterHub 5 and configurable-http-proxy
#      (scripts/debian-image.sh: debootstrap and apt, about 4 minutes
#      once; kept in podman's image store under a key of its inputs);
#   2. the hub in a container, configured from values.yaml as the chart
#      configures it (chart-hub/jupyterhub_config.py); each student's "pod"
#      (the init container that copies the course, then the server with a
#      persistent volume at ~/work, uid 1000, the memory and CPU limits) is
#      run with podman by chart-hub/launcher.py;
#   3. two students log in on the login page, start their servers from the
#      hub, reach them through the hub's OAuth login, find the course in
#      ~/work/course and save a file (chart-hub/student.py);
#   4. a gonb kernel runs the course's first cells through the hub;
#   5. a server is stopped and started again through the REST API, and the
#      student's file is still there.
#
# Environment: IMAGE (default gpumem-course; `make image` builds it),
# DEBIAN_MIRROR (as scripts/debian-image.sh). `make chart-hub-test` runs it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
course=$(cd "$here/../.." && pwd)
image=${IMAGE:-gpumem-course}
students="ada grace"
port=18100
hub=http://127.0.0.1:$port
failed=0
start=$(date +%s)

ok() { printf 'chart-hub-test: ok    %s\n' "$*"; }
bad() {
	printf 'chart-hub-test: FAIL  %s\n' "$*"
	failed=1
}
die() {
	printf 'chart-hub-test: %s\n' "$*" >&2
	exit 1
}
[ "$(id -u)" -eq 0 ] || die "run as root (podman and debootstrap need it)."
for tool in podman debootstrap python3; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found: apt-get install -y podman runc debootstrap"
done
podman image exists "$image" || die "no image $image: build it first (make image)."
# runc, and limits runc may set, as in scripts/image-test.sh.
run=(podman run --runtime runc --ulimit nofile=16384:16384 --ulimit nproc=16384:16384)

# 1. The hub image.
say() { printf 'chart-hub-test: %s\n' "$*"; }
# shellcheck source=scripts/debian-image.sh
. "$course/scripts/debian-image.sh"
debian_image gpumem-chart-hub trixie jupyterhub python3-yaml
hub_image=$debian_image_tag
hub_version=$("${run[@]}" --rm "$hub_image" jupyterhub --version 2>/dev/null)
su_version=$("${run[@]}" --rm "$image" jupyterhub-singleuser --version 2>/dev/null | tail -n 1)
echo "chart-hub-test: hub: JupyterHub $hub_version (Debian trixie); servers: $image, jupyterhub-singleuser $su_version"

# 2. The hub and the launcher. A run that was killed may have left its
# containers; something else on the hub's ports would make the hub fail.
podman rm -f -t 2 gpumem-chart-hub $(for s in $students; do echo "gpumem-chart-$s"; done) >/dev/null 2>&1
for s in $students; do podman volume rm -f "gpumem-chart-home-$s" >/dev/null 2>&1; done
for p in $port $((port + 1)) $((port + 81)); do
	if (: </dev/tcp/127.0.0.1/$p) 2>/dev/null; then
		die "port $p on 127.0.0.1 is in use (another chart-hub-test?); the test needs $port, $((port + 1)) and $((port + 81))."
	fi
done
state=$(mktemp -d /var/tmp/gpumem-chart-hub.XXXXXX)
mkdir "$state/hub" "$state/spawn"
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
cleanup() {
	[ -n "${launcher_pid:-}" ] && kill "$launcher_pid" 2>/dev/null
	podman rm -f -t 2 gpumem-chart-hub >/dev/null 2>&1
	for s in $students; do
		podman rm -f -t 2 "gpumem-chart-$s" >/dev/null 2>&1
		podman volume rm -f "gpumem-chart-home-$s" >/dev/null 2>&1
	done
	rm -rf "$state"
}
trap cleanup EXIT
/usr/bin/python3 "$here/chart-hub/launcher.py" "$state/spawn" "$image" >"$state/launcher.log" 2>&1 &
launcher_pid=$!
"${run[@]}" -d --name gpumem-chart-hub --network host \
	-v "$here/chart-hub:/chart-hub:ro" -v "$here/values.yaml:/values.yaml:ro" \
	-v "$state/hub:/state" -v "$state/spawn:/spawn" \
	-e GPUMEM_VALUES=/values.yaml -e GPUMEM_STATE=/state -e GPUMEM_ADMIN_TOKEN="$token" -e GPUMEM_HUB_PORT=$port \
	"$hub_image" jupyterhub -f /chart-hub/jupyterhub_config.py >/dev/null || die "the hub's container did not start."

api() { # api METHOD PATH: prints the body, fails on an HTTP error
	/usr/bin/python3 "$course/deploy/hub/hub_api.py" "$1" "$hub/hub/api$2" "$token"
}
for _ in $(seq 60); do
	api GET / >/dev/null 2>&1 && break
	sleep 1
done
if api GET / >/dev/null 2>&1; then
	ok "the hub answers on $hub"
else
	bad "the hub did not start:"
	podman logs gpumem-chart-hub 2>&1 | tail -n 30
	exit 1
fi

# 3. Students log in and start their servers as in a browser.
for s in $students; do
	/usr/bin/python3 "$here/chart-hub/student.py" "$hub" "$s" first | sed 's/^/chart-hub-test: /' || failed=1
done

# 4. A gonb kernel through the hub.
s=${students%% *}
t0=$(date +%s)
if out=$(/usr/bin/python3 "$course/deploy/hub/run_cell.py" "$hub/user/$s/" "$token" course/notebooks/00-welcome.ipynb "$course/lessons/00-welcome.md#1" "$course/lessons/00-welcome.md#2" 2>&1) &&
	grep -q 'device: *sim:0' <<<"$out"; then
	ok "$s: a gonb kernel ran the course's first cells through the hub in $(($(date +%s) - t0)) s ($(grep -m1 'device:' <<<"$out" | tr -s ' '))"
else
	bad "$s: running a cell failed:"
	sed "s/^/    /" <<<"$out" | grep -v "^ *$" | tail -n 20
fi

# 5. Stop and start again: the volume keeps the student's work.
api DELETE "/users/$s/server" >/dev/null 2>&1
for _ in $(seq 60); do
	[ "$(api GET "/users/$s" 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["servers"]))')" = 0 ] && break
	sleep 1
done
if podman container exists "gpumem-chart-$s"; then
	bad "$s: the server's container is still there after the hub stopped it"
else
	ok "$s: the hub stopped the server (its container is gone, its volume kept)"
fi
/usr/bin/python3 "$here/chart-hub/student.py" "$hub" "$s" again | sed 's/^/chart-hub-test: /' || failed=1

if [ "$failed" != 0 ]; then
	echo "chart-hub-test: the hub's log ends with:"
	podman logs gpumem-chart-hub 2>&1 | tail -n 40 | sed 's/^/    /'
	echo "chart-hub-test: the launcher's log:"
	tail -n 20 "$state/launcher.log" | sed 's/^/    /'
fi
warning=$(podman logs gpumem-chart-hub 2>&1 | grep -m1 -o 'jupyterhub version .* != jupyterhub-singleuser version [0-9.]*')
[ -n "$warning" ] && echo "chart-hub-test: the hub logged \"$warning\" (the checks above are what matters)"
echo "chart-hub-test: finished in $(($(date +%s) - start)) s"
exit "$failed"
