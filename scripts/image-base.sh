#!/usr/bin/env bash
# image-base.sh makes, with podman and no image registry, the two base images
# the Dockerfile starts from, and prints the --build-arg flags that select them:
#
#   localhost/gpumem-base:bookworm-<key>  a minimal Debian bookworm (debootstrap)
#                                         with this machine's extra CA certificates
#   localhost/gpumem-go:<goversion>       this machine's /usr/local/go, alone
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
go_tag=localhost/gpumem-go:$go_version

mirror=${DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
	mirror=$(sed -n 's/^URIs: *\([^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
	mirror=${mirror:-http://deb.debian.org/debian}
fi
debootstrap_args=(--variant=minbase --include=ca-certificates bookworm)
base_key=$({
	printf '%s\n' "$mirror" "${debootstrap_args[*]}"
	cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true
} | sha256sum | cut -c1-12)
base_tag=localhost/gpumem-base:bookworm-$base_key

if podman image exists "$base_tag"; then
	say "$base_tag: present"
else
	say "$base_tag: debootstrap bookworm from $mirror"
	started=$(date +%s)
	rootfs=$(mktemp -d /var/tmp/gpumem-rootfs.XXXXXX)
	trap 'rm -rf "$rootfs"' EXIT
	# Two tries: a mirror that drops one connection should not fail CI.
	for try in 1 2; do
		debootstrap "${debootstrap_args[@]}" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 && break
		if [ "$try" = 2 ]; then
			tail -n 20 "$rootfs.log" >&2
			rm -f "$rootfs.log"
			die "debootstrap of bookworm could not fetch its packages from $mirror (no network, or the mirror is unreachable; the last lines of its log are above)."
		fi
		say "debootstrap failed (attempt 1 of 2), retrying in 10 s: $(grep -m1 -E '^[EW]:' "$rootfs.log" || tail -n 1 "$rootfs.log")"
		rm -rf "$rootfs" && mkdir "$rootfs"
		sleep 10
	done
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
	say "$base_tag: imported ($(($(date +%s) - started)) s)"
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
