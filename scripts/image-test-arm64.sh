#!/usr/bin/env bash
# image-test-arm64.sh checks the arm64 classroom image (make
# image-multiarch) the way a student on Apple silicon meets it, with the
# network off, here under qemu-user-static: the container's machine is
# aarch64 and its Go builds for arm64; its default command serves
# JupyterLab, which lists the gonb kernel; lesson 02 executes top to bottom
# (scripts/run-notebooks.sh, with the figure check of its prose); `grader
# check` works. Slow (everything is emulated, about eleven times slower
# than natively here) and not in CI; docs/instructors.md, "Both
# architectures", has the time measured.
#
# Environment: IMAGE (default gpumem-course:arm64), NOTEBOOKS (default
# notebooks/02-allocator.ipynb).
set -uo pipefail
cd "$(dirname "$0")/.."
image=${IMAGE:-gpumem-course:arm64}
books=${NOTEBOOKS:-notebooks/02-allocator.ipynb}
name=gpumem-image-test-arm64-$$
failed=0
start=$(date +%s)
ok() { printf 'image-test-arm64: ok    %s\n' "$*"; }
bad() {
	printf 'image-test-arm64: FAIL  %s\n' "$*"
	failed=1
}
in_box() { podman exec "$name" "$@"; }

# shellcheck source=scripts/binfmt-arm64.sh
. scripts/binfmt-arm64.sh
binfmt_arm64 || {
	echo "image-test-arm64: $binfmt_arm64_why" >&2
	exit 1
}
podman image exists "$image" || {
	echo "image-test-arm64: no image $image here: make image-multiarch builds it" >&2
	exit 1
}
arch=$(podman image inspect --format '{{.Architecture}}' "$image")
[ "$arch" = arm64 ] && ok "$image is a linux/arm64 image" || bad "$image is a $arch image, want arm64"

# (runc and the ulimits: as in scripts/image-test.sh.) The image's own
# command: JupyterLab, as `docker run` starts it on a student's Mac.
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
podman run --runtime runc --ulimit nofile=16384:16384 --ulimit nproc=16384:16384 \
	-d --rm --name "$name" --network none --platform linux/arm64 -e JUPYTER_TOKEN="$token" "$image" >/dev/null || {
	echo "image-test-arm64: the container did not start" >&2
	exit 1
}
trap 'podman rm -f -t 2 "$name" >/dev/null 2>&1' EXIT

# JupyterLab under qemu starts in tens of seconds; up to five minutes.
api() { # api PATH: the HTTP status, then the body, of a request with the token
	podman exec -i "$name" python3 - "$1" "$token" <<'PY'
import sys, urllib.request, urllib.error
req = urllib.request.Request("http://127.0.0.1:8888" + sys.argv[1], headers={"Authorization": "token " + sys.argv[2]})
try:
    with urllib.request.urlopen(req, timeout=20) as r:
        print(r.status); print(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code)
except Exception as e:
    print(0); print(e)
PY
}
lab_start=$(date +%s)
for _ in $(seq 60); do
	[ "$(api /api/status | head -n 1)" = 200 ] && break
	sleep 5
done
specs=$(api /api/kernelspecs)
if [ "$(head -n 1 <<<"$specs")" = 200 ] && tail -n +2 <<<"$specs" | python3 -c \
	'import json, sys; sys.exit(0 if "gonb" in json.load(sys.stdin)["kernelspecs"] else 1)'; then
	ok "the image's command serves Jupyter, which lists the gonb kernel ($(($(date +%s) - lab_start)) s to answer)"
else
	bad "Jupyter did not answer with the gonb kernel in /api/kernelspecs: $(head -c 300 <<<"$specs")"
fi
lab=$(api /lab)
[ "$(head -n 1 <<<"$lab")" = 200 ] && grep -Eq '"appName": *"JupyterLab"' <<<"$lab" && ok "JupyterLab answers on /lab" ||
	bad "/lab does not serve JupyterLab: $(head -c 300 <<<"$lab")"

machine=$(in_box uname -m)
[ "$machine" = aarch64 ] && ok "the container's machine is aarch64" || bad "the container's machine is $machine"
goarch=$(in_box go env GOARCH)
[ "$goarch" = arm64 ] && ok "go env GOARCH is arm64 ($(in_box go env GOVERSION))" || bad "go env GOARCH is $goarch"
tools=$(in_box bash -c 'for t in bin/gonb bin/gopls bin/goimports; do od -An -tx1 -j18 -N2 "$t"; done' | tr -d ' \n')
[ "$tools" = b700b700b700 ] && ok "gonb, gopls and goimports are arm64 binaries" || bad "the tools are not all arm64 ELF binaries (e_machine: $tools)"

exercise=$(in_box bash -c 'ls -d exercises/*/ 2>/dev/null | head -n 1 | xargs -r basename')
check_start=$(date +%s)
if in_box go run ./grader/cmd/grader check "$exercise" 2>&1 | sed 's/^/    /'; [ "${PIPESTATUS[0]}" = 0 ]; then
	ok "grader check $exercise works offline ($(($(date +%s) - check_start)) s)"
else
	bad "grader check $exercise failed (above)"
fi

book_start=$(date +%s)
# shellcheck disable=SC2086 # a list of notebooks
if in_box env NOTEBOOK_CELL_TIMEOUT=3600 bash scripts/run-notebooks.sh $books 2>&1 | sed 's/^/    /'; [ "${PIPESTATUS[0]}" = 0 ]; then
	ok "$books executed top to bottom offline ($(($(date +%s) - book_start)) s)"
else
	bad "$books failed offline (above)"
fi
echo "image-test-arm64: $(($(date +%s) - start)) s in all"
[ "$failed" = 0 ] && echo "image-test-arm64: passed" || echo "image-test-arm64: FAILED"
exit "$failed"
