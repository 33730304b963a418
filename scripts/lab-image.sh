#!/usr/bin/env bash
# lab-image.sh serves this working tree in JupyterLab from the classroom image
# (`make lab-image`): the image's JupyterLab, GoNB, gopls and warm Go build
# cache, with the tree mounted at the image's course folder, so a student
# edits the files on this machine. It is `make lab` on a machine without
# JupyterLab (Debian 12), with podman; `make image` builds the image.
#
#   scripts/lab-image.sh [HOST [PORT]]     (default 127.0.0.1 8888)
#
# It prints the address with its token once JupyterLab answers, and stops
# the container on Ctrl-C (or SIGTERM). Files written in JupyterLab belong to
# the tree's owner: rootless podman maps you to the image's user (uid 1000);
# as root, the tree must be root's (the server then runs as root) or uid
# 1000's (the image's user).
#
# Environment: IMAGE (default gpumem-course).
set -euo pipefail
cd "$(dirname "$0")/.."
tree=$(pwd)
image=${IMAGE:-gpumem-course}
host=${1:-127.0.0.1}
port=${2:-8888}
course=/home/jovyan/course

say() { printf 'lab-image: %s\n' "$*"; }
die() {
	printf 'lab-image: %s\n' "$*" >&2
	exit 1
}
command -v podman >/dev/null 2>&1 || die "podman not found (apt-get install -y podman runc)."
podman image exists "$image" || die "no image $image here: build it first with make image (as root, about 5 minutes), or load one."

# Who the server runs as, so that what it writes in the tree is the tree's owner's.
owner=$(stat -c %u "$tree")
user_args=()
if [ "$(id -u)" != 0 ]; then
	[ "$owner" = "$(id -u)" ] || die "$tree belongs to uid $owner, not to you: the server could not write it."
	user_args=("--userns=keep-id:uid=1000,gid=100")
elif [ "$owner" = 0 ]; then
	user_args=(--user 0:0)
elif [ "$owner" != 1000 ]; then
	# The image's home (mode 700), with GoNB and the build cache in it, is
	# uid 1000's: another uid could neither run the kernel nor reach the tree.
	die "$tree belongs to uid $owner: run make lab-image as that user (podman without root maps you to the image's user), or as root on a tree owned by root or uid 1000."
fi
# runc and limits it may set, where podman's default runtime refuses a hybrid
# cgroup layout (scripts/image-test.sh).
runtime_args=()
command -v runc >/dev/null 2>&1 && runtime_args=(--runtime runc --ulimit nofile=16384:16384 --ulimit nproc=16384:16384)

token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
name=gpumem-lab-$$
# The image's bin/ (GoNB, goimports, gopls, which its gonb kernel runs) stays
# in view under the mounted tree: an anonymous volume there starts as a copy
# of the image's folder.
podman run -d --rm --name "$name" "${runtime_args[@]}" "${user_args[@]}" \
	-p "$host:$port:8888" -e JUPYTER_TOKEN="$token" \
	-v "$tree:$course" -v "$course/bin" \
	"$image" bash -c 'allow=; [ "$(id -u)" = 0 ] && allow=--allow-root
		exec jupyter lab --no-browser --ip=0.0.0.0 --port=8888 --ServerApp.root_dir='"$course"' --LabApp.default_url=/lab/tree/notebooks $allow' >/dev/null ||
	die "the container did not start (podman run above)."
# shellcheck disable=SC2317 # run by the trap
stop() {
	trap - INT TERM EXIT
	podman rm -f -t 5 "$name" >/dev/null 2>&1 || true
}
trap stop INT TERM EXIT

url=http://$host:$port
for _ in $(seq 60); do
	podman container exists "$name" || die "the container stopped: $(podman logs "$name" 2>&1 | tail -n 5)"
	if python3 -c 'import sys, urllib.request
urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/api/status", headers={"Authorization": "token " + sys.argv[2]}), timeout=5)' \
		"$url" "$token" 2>/dev/null; then
		say "JupyterLab from $image serves $tree on $url/lab (Ctrl-C stops it):"
		say "    $url/lab/tree/notebooks?token=$token"
		# (In the background, so that the shell's wait returns on a signal
		# and the trap stops the container at once.)
		podman wait "$name" >/dev/null 2>&1 &
		wait $! || true
		exit 0
	fi
	sleep 1
done
podman logs "$name" 2>&1 | tail -n 20 >&2
die "JupyterLab did not answer on $url within 60 s (its log is above)."
