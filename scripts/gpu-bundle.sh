#!/usr/bin/env bash
# Builds what scripts/gpu-check.sh runs on a GPU machine that has no Go
# toolchain and no network (issue 26), into one folder to carry there with
# the working tree (default gpu-bundle/, ignored by git):
#
#   gpu-bundle/gpukit-cuda.tar.xz   tests/*.test   every gpukit test binary, -tags cuda
#                                   tests.txt      binary and package folder, one a line
#                                   bin/memtrace   bin/gpucheck   bin/lessons (-tags cuda)
#   gpu-bundle/MANIFEST.txt         commit, Go, sizes, shared libraries, glibc needed
#
# Binaries are stripped (-s -w) and the archive is xz-compressed, because
# the test binaries share most of their code: about 130 MB of binaries
# become under 30 MB. The build needs the CUDA headers
# (scripts/install-cuda-headers.sh) but no GPU. Every binary must need no
# shared library beyond the driver (libcuda.so.1) and glibc: cuBLAS and
# NVRTC are opened at run time (gpukit/device/cuda/doc.go); the script fails
# otherwise, and when the folder would not fit the 64 MiB that a GPU
# machine's copy of the working tree may carry.
#
#   scripts/gpu-bundle.sh [OUT]
#
# GPU_BUNDLE_TAGS= (empty) builds the same bundle without the cuda backend,
# which runs anywhere: scripts/gpu-check-dry.sh uses it to run gpu-check's
# whole pipeline on sim, without a GPU.
set -euo pipefail

cd "$(dirname "$0")/.."
out=${1:-gpu-bundle}
go=${GO:-go}
tags=${GPU_BUNDLE_TAGS-cuda}
limit=$((60 * 1024 * 1024)) # the tree itself is under 4 MiB of the 64 MiB
allowed_libs=" libcuda.so.1 libc.so.6 libdl.so.2 libpthread.so.0 libm.so.6 libresolv.so.2 "

if [ "$tags" = cuda ] && [ ! -f /usr/include/cuda.h ] && [ -z "${CUDA_PATH:-}" ]; then
	echo "gpu-bundle: CUDA headers not installed (run: sudo bash scripts/install-cuda-headers.sh)" >&2
	exit 1
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/tests" "$stage/bin"

echo "gpu-bundle: test binaries of gpukit/... (-tags '$tags')"
"$go" test -tags "$tags" -c -ldflags='-s -w' -o "$stage/tests/" ./gpukit/... >/dev/null
# The binary of package path/to/name is name.test; gpu-check.sh runs it in
# the package's folder, where its testdata is.
"$go" list -tags "$tags" -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' ./gpukit/... |
	while read -r path dir; do
		[ -n "$path" ] || continue
		bin=$(basename "$path").test
		[ -f "$stage/tests/$bin" ] || { echo "gpu-bundle: no binary $bin for $path" >&2; exit 1; }
		echo "$bin ${dir#"$PWD"/}"
	done >"$stage/tests.txt"
if [ "$(wc -l <"$stage/tests.txt")" -ne "$(ls "$stage/tests" | wc -l)" ]; then
	echo "gpu-bundle: tests.txt does not list every binary (two packages with one name?)" >&2
	exit 1
fi

echo "gpu-bundle: memtrace, gpucheck, lessons (-tags '$tags')"
"$go" build -tags "$tags" -ldflags='-s -w' -o "$stage/bin/" ./gpukit/cmd/memtrace ./gpukit/cmd/gpucheck
# The notebooks as one program (scripts/lessonprog); its source must lie in
# this module, so it is written under bin/ (ignored by git; the "_" keeps it
# out of ./... for a go vet running meanwhile) and removed.
lsrc=bin/_lessons-src.$$
trap 'rm -rf "$stage" "$lsrc"' EXIT
"$go" run ./scripts/lessonprog -out "$lsrc" >/dev/null
"$go" build -tags "$tags" -ldflags='-s -w' -o "$stage/bin/lessons" "./$lsrc"
rm -rf "$lsrc"

# Shared libraries: the driver and glibc only.
bad=0
needs_glibc=""
linked=""
for f in "$stage"/tests/* "$stage"/bin/*; do
	for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		case "$allowed_libs" in
		*" $lib "*) [[ " $linked " == *" $lib "* ]] || linked="$linked $lib" ;;
		*) echo "gpu-bundle: $(basename "$f") needs $lib; only the driver and glibc may be linked" >&2; bad=1 ;;
		esac
	done
	needs_glibc=$(printf '%s\n' "$needs_glibc" $(objdump -T "$f" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1) | sort -uV | tail -1)
done
[ "$bad" = 0 ] || exit 1

mkdir -p "$out"
tmp=$(mktemp "$out/.gpukit-cuda.tar.xz.XXXXXX")
tar -C "$stage" -cf - tests.txt tests bin | xz -T2 -6 >"$tmp"
mv -f "$tmp" "$out/gpukit-cuda.tar.xz"
rm -f "$out"/.gpukit-cuda.tar.xz.* 2>/dev/null || true

size=$(du -sb "$out" | cut -f1)
{
	echo "commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "go=$("$go" env GOVERSION)"
	echo "tags=$tags"
	echo "built=$(date -u +%FT%TZ)"
	echo "binaries=$(ls "$stage"/tests | wc -l) test binaries, $(ls "$stage"/bin | tr '\n' ' ')"
	echo "unpacked_bytes=$(du -sb "$stage" | cut -f1)"
	echo "archive_bytes=$(stat -c %s "$out/gpukit-cuda.tar.xz")"
	echo "shared_libraries=${linked# } (cuBLAS and NVRTC are opened at run time)"
	echo "glibc_needed=${needs_glibc#GLIBC_}"
} >"$out/MANIFEST.txt"
cat "$out/MANIFEST.txt"
if [ "$size" -gt "$limit" ]; then
	echo "gpu-bundle: $out is $size bytes, over the $limit a GPU machine's copy can carry" >&2
	exit 1
fi
echo "gpu-bundle: $out is $((size / 1024 / 1024)) MiB"
