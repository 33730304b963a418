#!/usr/bin/env bash
# image-base.sh makes, with podman and no image registry, the base images the
# Dockerfile starts from, and prints the --build-arg flags that select them
# (BASE, GO_IMAGE, and BUILD_GO_IMAGE and BUILD_GO_PLATFORM: the Go of this
# machine's architecture, which compiles for both):
#
#   localhost/gpumem-base:trixie-<key>    a minimal Debian trixie (debootstrap)
#                                         with this machine's extra CA certificates
#   localhost/gpumem-go:<goversion>-slim  this machine's /usr/local/go, alone,
#                                         without the toolchain's own test suite
#                                         and API lists (test/, api/: 29 MB)
#
# Each is made once and then reused from podman's image store, which outlives
# the clones CI runs in. The base's tag carries a key of everything it is made
# from (the mirror, the debootstrap command, the CA certificates' contents), so
# a change to any of them makes a new base instead of reusing a stale one.
# CI and `make image` call it; a machine that can pull from Docker Hub does
# not need it (the Dockerfile's defaults are the public debian and golang
# images).
#
# Environment: DEBIAN_MIRROR (default: the first URI of this machine's apt
# sources, else http://deb.debian.org/debian); GOROOT_DIR (default
# /usr/local/go); IMAGE_ARCH (default: this machine's). For another
# architecture (arm64 on an amd64 machine, make image-multiarch) the base is
# made under qemu (scripts/debian-image.sh) and the Go image from the same Go
# release for that architecture, which the Go module proxy serves as the
# module golang.org/toolchain (checked against the checksum database, as the
# go command checks every toolchain it downloads, unless GOSUMDB is off):
#
#   localhost/gpumem-base:trixie-arm64-<key>
#   localhost/gpumem-go:<goversion>-slim-arm64
set -euo pipefail

say() { printf 'image-base: %s\n' "$*" >&2; }
die() {
	printf 'image-base: %s\n' "$*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap and podman import need it)."
for tool in podman debootstrap; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found: apt-get install -y podman runc debootstrap"
done

goroot=${GOROOT_DIR:-/usr/local/go}
[ -x "$goroot/bin/go" ] || die "no Go toolchain at $goroot (set GOROOT_DIR)."
go_version=$("$goroot/bin/go" env GOVERSION)
host_arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
arch=${IMAGE_ARCH:-$host_arch}

# shellcheck source=scripts/debian-image.sh
. "$(dirname "$0")/debian-image.sh"
DEBIAN_ARCH=$arch debian_image gpumem-base trixie
base_tag=$debian_image_tag

# go_image ARCH: makes localhost/gpumem-go:<goversion>-slim (this machine's
# architecture) or ...-slim-ARCH unless podman has it, and sets go_tag.
go_image() {
	local arch=$1 work module dir
	go_tag=localhost/gpumem-go:$go_version-slim
	[ "$arch" = "$host_arch" ] || go_tag=$go_tag-$arch
	if podman image exists "$go_tag"; then
		say "$go_tag: present"
	elif [ "$arch" = "$host_arch" ]; then
		# A scratch image holding only the toolchain, at the path the
		# Dockerfile copies from (the golang images keep it at /usr/local/go
		# too). Building and testing Go code needs neither test/ (the
		# compiler's own tests) nor api/ (the standard library's API history).
		tar -C "$goroot/.." --numeric-owner --anchored --exclude="$(basename "$goroot")/test" --exclude="$(basename "$goroot")/api" \
			--transform "s,^$(basename "$goroot"),usr/local/go," -c "$(basename "$goroot")" |
			podman import --quiet - "$go_tag" >/dev/null
		say "$go_tag: imported from $goroot"
	else
		# The same release for the other architecture:
		# golang.org/toolchain v0.0.1-go1.26.8.linux-arm64 is the module
		# GOTOOLCHAIN=go1.26.8 would run on an arm64 machine, unpacked by go
		# mod download into a module cache of its own. A module zip keeps no
		# execute bits and holds each go.mod of the tree as _go.mod: as the go
		# command does before it runs a downloaded toolchain
		# (cmd/go/internal/toolchain/select.go), the commands and tools are
		# made executable and each _go.mod copied back.
		# (A run killed before its trap ran leaves its folder: those older
		# than a day go first.)
		find /var/tmp -maxdepth 1 -name 'gpumem-toolchain.*' -mmin +1440 -exec chmod -R u+w {} + -exec rm -rf {} + 2>/dev/null || true
		work=$(mktemp -d /var/tmp/gpumem-toolchain.XXXXXX)
		# shellcheck disable=SC2064 # the folder is known now
		trap "chmod -R u+w '$work'; rm -rf '$work'" EXIT
		module=golang.org/toolchain@v0.0.1-$go_version.linux-$arch
		dir=$(cd "$work" && GOMODCACHE=$work/mod GOFLAGS= "$goroot/bin/go" mod download -json "$module" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') && [ -f "$dir/bin/go" ] ||
			die "could not download $module from $("$goroot/bin/go" env GOPROXY) (no network, or the proxy does not serve it)."
		cp -r "$dir" "$work/go" && chmod -R u+w "$work/go"
		find "$work/go/bin" "$work/go/pkg/tool" -type f -exec chmod a+x {} +
		find "$work/go/lib" -type f -name 'go_?*_?*_exec' -exec chmod a+x {} + 2>/dev/null || true
		find "$work/go" -name _go.mod -execdir cp _go.mod go.mod \;
		tar -C "$work" --numeric-owner --owner=0 --group=0 --exclude=go/test --exclude=go/api \
			--transform 's,^go,usr/local/go,' -c go |
			podman import --quiet --os linux --arch "$arch" - "$go_tag" >/dev/null
		chmod -R u+w "$work" && rm -rf "$work"
		trap - EXIT
		say "$go_tag: imported from $module"
	fi
}
# The build machine's Go compiles (BUILD_GO_IMAGE); the image's own is
# what students run (GO_IMAGE). On this machine's architecture they are one.
go_image "$host_arch"
build_go_tag=$go_tag
[ "$arch" = "$host_arch" ] || go_image "$arch"

echo "--build-arg BASE=$base_tag --build-arg GO_IMAGE=$go_tag --build-arg BUILD_GO_IMAGE=$build_go_tag --build-arg BUILD_GO_PLATFORM=linux/$host_arch"
