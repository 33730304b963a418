#!/usr/bin/env bash
# Installs the CUDA headers and driver stub that the `cuda` build tag compiles
# against (Debian's nvidia-cuda-dev and libcuda1, CUDA 11.8 on bookworm). They
# live in Debian's contrib and non-free components, which this script enables.
# Nothing here needs a GPU: the cuda build is compiled and vetted, not run.
set -euo pipefail

if [ -f /usr/include/cuda.h ] && ls /usr/lib/x86_64-linux-gnu/libcuda.so* >/dev/null 2>&1; then
	echo "cuda headers: already installed"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "cuda headers: not installed, and installing them needs root." >&2
	echo "  run: sudo bash scripts/install-cuda-headers.sh   (Debian: nvidia-cuda-dev libcuda1 from contrib non-free)" >&2
	exit 1
fi
. /etc/os-release
if [ "${ID:-}" != debian ]; then
	echo "cuda headers: automatic install supports Debian only (this is ${ID:-unknown})." >&2
	echo "  install your distribution's CUDA 11.8 or 12.x toolkit headers (cuda.h) and libcuda, then rerun make test." >&2
	exit 1
fi

sources=/etc/apt/sources.list.d/gpukit-contrib-nonfree.sources
if [ ! -f "$sources" ]; then
	# Reuse the mirror the machine already uses for main.
	mirror=$(grep -hoE '^(URIs:|deb) +[^ ]+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
		grep -v security | head -n 1 | awk "{print \$2}" || true)
	mirror=${mirror:-http://deb.debian.org/debian}
	cat >"$sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: $VERSION_CODENAME ${VERSION_CODENAME}-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
	echo "cuda headers: enabled contrib non-free from $mirror"
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nvidia-cuda-dev libcuda1 >/dev/null
test -f /usr/include/cuda.h || { echo "cuda headers: nvidia-cuda-dev installed but /usr/include/cuda.h is missing" >&2; exit 1; }
echo "cuda headers: installed ($(dpkg-query -W -f='${Version}' nvidia-cuda-dev))"
