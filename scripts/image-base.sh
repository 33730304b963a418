#!/usr/bin/env bash
# image-base.sh makes, with podman and no image registry, the two base images
# the Dockerfile starts from, and prints the --build-arg flags that select them:
#
#   localhost/gpumem-base:bookworm   a minimal Debian bookworm (debootstrap)
#                                    with this machine's extra CA certificates
#   localhost/gpumem-go:<goversion>  this machine's /usr/local/go, alone
#
# Each is made once and then reused. CI and `make image` call it; a machine
# that can pull from Docker Hub does not need it (the Dockerfile's defaults
# are the public debian and golang images).
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
base_tag=localhost/gpumem-base:bookworm
go_tag=localhost/gpumem-go:$go_version

mirror=${DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
	mirror=$(sed -n 's/^URIs: *\([^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
	mirror=${mirror:-http://deb.debian.org/debian}
fi

if podman image exists "$base_tag"; then
	say "$base_tag: present"
else
	say "$base_tag: debootstrap bookworm from $mirror"
	rootfs=$(mktemp -d /var/tmp/gpumem-rootfs.XXXXXX)
	trap 'rm -rf "$rootfs"' EXIT
	debootstrap --variant=minbase --include=ca-certificates bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
		tail -n 20 "$rootfs.log" >&2
		rm -f "$rootfs.log"
		die "debootstrap of bookworm from $mirror failed (the last lines of its log are above)."
	}
	rm -f "$rootfs.log"
	# The extra certificate authorities this machine trusts (a proxy that
	# inspects TLS, a private mirror) go into the base image, not into the
	# Dockerfile, so the published Dockerfile stays free of them.
	if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
		cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
		chroot "$rootfs" update-ca-certificates >/dev/null
		say "$base_tag: added $(ls /usr/local/share/ca-certificates/*.crt | wc -l) extra CA certificate(s)"
	fi
	rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
	tar -C "$rootfs" --numeric-owner -c . | podman import --quiet - "$base_tag" >/dev/null
	rm -rf "$rootfs"
	trap - EXIT
	say "$base_tag: imported"
fi

if podman image exists "$go_tag"; then
	say "$go_tag: present"
else
	# A scratch image holding only the toolchain, at the path the Dockerfile
	# copies from (the golang images keep it at /usr/local/go too).
	tar -C "$goroot/.." --numeric-owner --transform "s,^$(basename "$goroot"),usr/local/go," -c "$(basename "$goroot")" |
		podman import --quiet - "$go_tag" >/dev/null
	say "$go_tag: imported from $goroot"
fi

echo "--build-arg BASE=$base_tag --build-arg GO_IMAGE=$go_tag"
