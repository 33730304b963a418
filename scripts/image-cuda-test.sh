#!/usr/bin/env bash
# image-cuda-test.sh checks the GPU variant of the classroom image (make
# image-cuda) where no GPU is: in a container with the network off, as the
# image's user, gpukit's cuda build compiles and vets against the image's
# CUDA headers, its tests link, and NVRTC compiles every CUDA kernel (which
# needs no GPU). Running on a GPU needs an NVIDIA host and its container
# toolkit (docs/instructors.md).
#
# `make image-cuda-test` builds the image first, then runs this. Environment:
# IMAGE (default gpumem-course:cuda).
set -uo pipefail
cd "$(dirname "$0")/.."
image=${IMAGE:-gpumem-course:cuda}
start=$(date +%s)

# --runtime runc and the ulimits: see scripts/image-test.sh.
# shellcheck disable=SC2016
podman run --runtime runc --ulimit nofile=16384:16384 --ulimit nproc=16384:16384 \
	--rm --network none "$image" bash -c '
set -e
echo "image-cuda-test: uid $(id -u), GOFLAGS=$GOFLAGS, $(grep -m1 "define CUDA_VERSION" /usr/include/cuda.h /usr/local/cuda/include/cuda.h 2>/dev/null | head -n 1)"
go build -tags cuda ./...
go vet -tags cuda ./gpukit/...
tmp=$(mktemp -d) && go test -tags cuda -c -o "$tmp" ./gpukit/... && rm -rf "$tmp"
echo "image-cuda-test: ok    go build, go vet and go test -c with -tags cuda"
go test -count=1 -tags nvrtc ./gpukit/device/cuda/
echo "image-cuda-test: ok    NVRTC compiles every CUDA kernel"
' 2>&1 | sed 's/^/    /'
status=${PIPESTATUS[0]}
size=$(podman image inspect --format '{{.Size}}' "$image" | awk '{ printf "%.0f MB", $1 / 1e6 }')
echo "image-cuda-test: image $image is $size; the checks took $(($(date +%s) - start)) s"
[ "$status" = 0 ] && echo "image-cuda-test: passed" || echo "image-cuda-test: FAILED"
exit "$status"
