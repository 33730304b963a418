# debian-image.sh, sourced by scripts/image-base.sh and
# deploy/k8s/test-chart-hub.sh, makes podman images of a minimal Debian
# without an image registry: debootstrap, this machine's extra CA
# certificates, optionally some packages, then `podman import`.
#
#   debian_image NAME SUITE [PACKAGE...]
#
# sets debian_image_tag to localhost/NAME:SUITE-KEY, where KEY is a hash of
# everything the image is made from (the mirror, the debootstrap command,
# the packages, the CA certificates' contents), and makes the image unless
# podman's store has it already; a change to any input makes a new image
# instead of reusing a stale one. It reports through the caller's say and
# die. Environment: DEBIAN_MIRROR (default: the first URI of this machine's
# apt sources, else http://deb.debian.org/debian); DEBIAN_ARCH (default:
# this machine's, dpkg --print-architecture). Another architecture's image
# (arm64 on an amd64 machine) is made under qemu-user-static through binfmt
# (scripts/binfmt-arm64.sh registers it); its tag names the architecture,
# localhost/NAME:SUITE-ARCH-KEY, and the image's metadata says it.

debian_mirror() {
	local mirror=${DEBIAN_MIRROR:-}
	if [ -z "$mirror" ]; then
		mirror=$(sed -n 's/^URIs: *\([^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
		mirror=${mirror:-http://deb.debian.org/debian}
	fi
	echo "$mirror"
}

# What dpkg leaves out of every package in these images (also part of their key).
debian_image_slim=(path-exclude=/usr/share/doc/'*' path-include=/usr/share/doc/'*'/copyright path-exclude=/usr/share/man/'*'
	path-exclude=/usr/share/info/'*' path-exclude=/usr/share/locale/'*' path-include=/usr/share/locale/locale.alias)

debian_image() {
	local name=$1 suite=$2
	shift 2
	local packages="$*" mirror key rootfs started try
	mirror=$(debian_mirror)
	local host_arch arch=${DEBIAN_ARCH:-} arch_tag=
	host_arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
	arch=${arch:-$host_arch}
	local debootstrap_args=(--variant=minbase --include=ca-certificates "$suite")
	# (This machine's architecture goes into neither the arguments nor the
	# tag, so the images made before DEBIAN_ARCH existed keep their keys.)
	if [ "$arch" != "$host_arch" ]; then
		debootstrap_args=(--arch="$arch" "${debootstrap_args[@]}")
		arch_tag=$arch-
	fi
	key=$({
		printf '%s\n' "$mirror" "${debootstrap_args[*]}" "${debian_image_slim[*]}"
		[ -z "$packages" ] || printf '%s\n' "$packages"
		cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true
	} | sha256sum | cut -c1-12)
	debian_image_tag=localhost/$name:$suite-$arch_tag$key
	if podman image exists "$debian_image_tag"; then
		say "$debian_image_tag: present"
		return
	fi
	say "$debian_image_tag: debootstrap $suite ($arch) from $mirror${packages:+, then $packages}"
	started=$(date +%s)
	rootfs=$(mktemp -d /var/tmp/gpumem-rootfs.XXXXXX)
	# shellcheck disable=SC2064 # the folder is known now
	trap "umount '$rootfs/proc' 2>/dev/null; rm -rf '$rootfs' '$rootfs.log'" EXIT
	# Two tries: a mirror that drops one connection should not fail CI.
	for try in 1 2; do
		debootstrap "${debootstrap_args[@]}" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 && break
		if [ "$try" = 2 ]; then
			tail -n 20 "$rootfs.log" >&2
			die "debootstrap of $suite could not fetch its packages from $mirror (no network, or the mirror is unreachable; the last lines of its log are above)."
		fi
		say "debootstrap failed (attempt 1 of 2), retrying in 10 s: $(grep -m1 -E '^[EW]:' "$rootfs.log" || tail -n 1 "$rootfs.log")"
		rm -rf "$rootfs" && mkdir "$rootfs"
		sleep 10
	done
	# The extra certificate authorities this machine trusts (a proxy that
	# inspects TLS, a private mirror) go into the base image, not into a
	# Dockerfile, so published files stay free of them.
	if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
		cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
		chroot "$rootfs" update-ca-certificates >/dev/null
		say "$debian_image_tag: added $(ls /usr/local/share/ca-certificates/*.crt | wc -l) extra CA certificate(s)"
	fi
	if [ -n "$packages" ]; then
		cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
		mount --bind /proc "$rootfs/proc"
		# shellcheck disable=SC2086 # a list of package names
		chroot "$rootfs" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages" >"$rootfs.log" 2>&1 || {
			tail -n 20 "$rootfs.log" >&2
			die "installing $packages from Debian $suite failed (the last lines of apt's log are above)."
		}
		umount "$rootfs/proc"
		rm -f "$rootfs/etc/resolv.conf"
	fi
	rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/*
	# No manuals, no translations of the tools' messages, no documentation
	# but the copyright files, now or in what apt installs later (about
	# 47 MB of a minimal trixie).
	printf '%s\n' "${debian_image_slim[@]}" >"$rootfs/etc/dpkg/dpkg.cfg.d/90-gpumem-slim"
	find "$rootfs/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
	find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
	rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
	tar -C "$rootfs" --numeric-owner -c . | podman import --quiet --os linux --arch "$arch" - "$debian_image_tag" >/dev/null ||
		die "podman import of $debian_image_tag failed."
	rm -rf "$rootfs" "$rootfs.log"
	trap - EXIT
	say "$debian_image_tag: imported ($(($(date +%s) - started)) s)"
}
