#!/usr/bin/env bash
# image-multiarch.sh builds the classroom image for linux/amd64 and
# linux/arm64 and joins them in one manifest list, so that `docker run` or
# `podman run` of one name runs natively on an x86-64 server and on Apple
# silicon (Docker Desktop and Podman run linux/arm64 there) or an arm64
# server. `make image-multiarch` runs it; `make image-push
# REGISTRY=registry.example.org/course` pushes the list with both images.
#
#   localhost/gpumem-course:latest      linux/amd64 (make image, CI's)
#   localhost/gpumem-course:arm64       linux/arm64, built under qemu
#   localhost/gpumem-course:multiarch   the manifest list of the two
#
# The arm64 build emulates every RUN step (apt, the Go tools, the warm
# build cache) with qemu-user-static: it takes far longer than the amd64
# one (docs/instructors.md, "Both architectures", has the time measured) and
# is not part of CI. It needs an amd64 machine and root (binfmt_misc).
# Environment: PUSH=REGISTRY/NAME:TAG pushes the list there afterwards
# (podman manifest push --all; log in first with podman login);
# TLS_VERIFY=false for a registry served over plain HTTP (a test registry
# on localhost).
set -euo pipefail
cd "$(dirname "$0")/.."
list=localhost/gpumem-course:multiarch

[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] || {
	echo "image-multiarch: builds on an amd64 machine (arm64 under qemu); this one is $(uname -m)" >&2
	exit 1
}
start=$(date +%s)
echo "image-multiarch: linux/amd64 (gpumem-course:latest)"
IMAGE=gpumem-course bash scripts/image-build.sh
amd64_done=$(date +%s)
echo "image-multiarch: linux/arm64 (gpumem-course:arm64), under qemu: every step is emulated, expect it to take an hour or more the first time"
IMAGE=gpumem-course:arm64 IMAGE_ARCH=arm64 bash scripts/image-build.sh
arm64_done=$(date +%s)

podman manifest rm "$list" >/dev/null 2>&1 || true
podman manifest create "$list" >/dev/null
for image in localhost/gpumem-course:latest localhost/gpumem-course:arm64; do
	podman manifest add "$list" "containers-storage:$image" >/dev/null
done
# What the list holds, one line an image: its platform and its digest.
podman manifest inspect "$list" | python3 -c '
import json, sys
for m in json.load(sys.stdin)["manifests"]:
    p = m.get("platform", {})
    print("image-multiarch:   %s/%s %s" % (p.get("os"), p.get("architecture"), m["digest"]))'
echo "image-multiarch: $list holds both (amd64 $((amd64_done - start)) s, arm64 $((arm64_done - amd64_done)) s)"
if [ -n "${PUSH:-}" ]; then
	podman manifest push --all --tls-verify="${TLS_VERIFY:-true}" "$list" "docker://$PUSH"
	echo "image-multiarch: pushed to $PUSH"
fi
