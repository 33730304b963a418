#!/usr/bin/env bash
# image-base.sh makes, with podman and no image registry, the two base images
# the Dockerfile starts from, and prints the --build-arg flags that select them:
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
# /usr/local/go).
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
go_tag=localhost/gpumem-go:$go_version-slim

# shellcheck source=scripts/debian-image.sh
. "$(dirname "$0")/debian-image.sh"
debian_image gpumem-base trixie
base_tag=$debian_image_tag

if podman image exists "$go_tag"; then
	say "$go_tag: present"
else
	# A scratch image holding only the toolchain, at the path the Dockerfile
	# copies from (the golang images keep it at /usr/local/go too). Building
	# and testing Go code needs neither test/ (the compiler's own tests) nor
	# api/ (the standard library's API history).
	tar -C "$goroot/.." --numeric-owner --anchored --exclude="$(basename "$goroot")/test" --exclude="$(basename "$goroot")/api" \
		--transform "s,^$(basename "$goroot"),usr/local/go," -c "$(basename "$goroot")" |
		podman import --quiet - "$go_tag" >/dev/null
	say "$go_tag: imported from $goroot"
fi

echo "--build-arg BASE=$base_tag --build-arg GO_IMAGE=$go_tag"
