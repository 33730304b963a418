#!/usr/bin/env bash
# image-build.sh builds the classroom image with podman from base images made
# on this machine (scripts/image-base.sh), so no image registry is needed.
# `make image` runs it; a second run reuses every cached layer. The build
# context is the student edition (scripts/image-context.sh: grader release,
# no solutions, no hidden tests), never the checkout itself.
#
#   scripts/image-build.sh [extra podman build flags]
#
# Environment: IMAGE (default gpumem-course, or gpumem-course:arm64 for
# arm64 on another machine), GPUKIT_TAGS (cuda for the GPU variant, which
# adds Debian's CUDA headers; make image-cuda), IMAGE_ARCH (default: this
# machine's; arm64 on an amd64 machine builds under qemu-user-static, which
# scripts/binfmt-arm64.sh registers: every RUN step is emulated, so it takes
# far longer, docs/instructors.md, "Both architectures"). The build fetches Go
# modules through this machine's `go env GOPROXY` and Debian packages from
# the base image's mirror; this machine's extra CA certificates are in the
# base image (image-base.sh), never in the Dockerfile.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
host_arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
arch=${IMAGE_ARCH:-$host_arch}
platform=()
if [ "$arch" = "$host_arch" ]; then
	image=${IMAGE:-gpumem-course}
else
	image=${IMAGE:-gpumem-course:$arch}
	[ "$arch" = arm64 ] || {
		echo "image: IMAGE_ARCH=$arch: this script builds for $host_arch and arm64 only" >&2
		exit 1
	}
	# shellcheck source=scripts/binfmt-arm64.sh
	. scripts/binfmt-arm64.sh
	binfmt_arm64 || {
		echo "image: an arm64 image is built under qemu, and $binfmt_arm64_why" >&2
		exit 1
	}
	platform=(--platform "linux/$arch")
fi

command -v podman >/dev/null 2>&1 || {
	echo "image: podman not found (apt-get install -y podman runc debootstrap), or build with docker: docker build -t $image ." >&2
	exit 1
}
base_args=$(IMAGE_ARCH=$arch bash scripts/image-base.sh)
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
bash scripts/image-context.sh "$context/edition"
start=$(date +%s)
# --isolation chroot: podman's default OCI runtime refuses the hybrid cgroup
# layout of some hosts (this CI machine's among them); chroot isolation needs
# no cgroups and is enough for a build.
# Each step's line is prefixed with the seconds since the build began, so
# the log shows where the time goes.
# shellcheck disable=SC2086
if ! podman build --isolation chroot "${platform[@]}" $base_args \
	--build-arg BUILD_GOPROXY="$(go env GOPROXY)" \
	--build-arg GPUKIT_TAGS="${GPUKIT_TAGS:-}" \
	-t "$image" -f Dockerfile "$@" "$context/edition" 2>&1 | while IFS= read -r line; do
	case $line in
	*STEP\ *) printf '[%4ds] %s\n' "$(($(date +%s) - start))" "$line" ;;
	*) printf '%s\n' "$line" ;;
	esac
done; then
	echo "image: the build of $image failed; the step and its error are above." >&2
	exit 1
fi
# Earlier builds' final images, untagged by this one, would otherwise pile
# up on a machine that builds on every CI run (about 140 MB each); the layers
# of tagged images, the cache of the next build, are kept.
podman image prune -f >/dev/null 2>&1 || true
echo "image: built $image in $(($(date +%s) - start))s ($(podman image inspect --format '{{.Size}}' "$image" | awk '{ printf "%.0f MB", $1 / 1e6 }'))"
