#!/usr/bin/env bash
# PyTorch 2.x for scripts/bench-torch.sh: a minimal Debian 13 (trixie)
# chroot with trixie's python3-torch, OpenBLAS (pthread) and jemalloc,
# made with debootstrap on first use, outside the repository, in
# $TRIXIE_TORCH (default /var/cache/gpumem/trixie-torch; about 1.5 GB,
# a few minutes from deb.debian.org). Needs root and debootstrap.
#
#   scripts/trixie-torch.sh ensure       create it if missing, print its path
#   scripts/trixie-torch.sh run ARGS...  run ARGS inside it (a private
#                                        mount namespace with /proc, /sys and
#                                        /dev bound, gone when ARGS exits)
#
# As root it refuses to create or use the chroot through a symbolic link,
# in any component of the path, and refuses a directory not owned by root:
# another user could otherwise point it at a path of their choosing.
set -euo pipefail
DIR=${TRIXIE_TORCH:-/var/cache/gpumem/trixie-torch}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PKGS=python3-torch,libopenblas0-pthread,libjemalloc2,python3-numpy

die() { echo "trixie-torch: $*" >&2; exit 1; }

case $DIR in /*) ;; *) die "$DIR: not an absolute path" ;; esac

# safe_dir PATH: every existing component of PATH is a real directory
# (not a link) owned by root and not writable by others.
safe_dir() {
	local p="" c
	IFS=/ read -ra parts <<<"${1#/}"
	for c in "${parts[@]}"; do
		[ -n "$c" ] || continue
		case $c in .|..) die "$1: . or .. in the path" ;; esac
		p="$p/$c"
		[ -e "$p" ] || [ -L "$p" ] || return 0
		[ -L "$p" ] && die "$p is a symbolic link; refusing"
		[ -d "$p" ] || die "$p is not a directory"
		[ "$(stat -c %u "$p")" = 0 ] || die "$p is not owned by root; refusing"
		case $(stat -c %A "$p") in
			????????w?) [ -k "$p" ] || die "$p is writable by others; refusing" ;;
		esac
	done
}

ensure() {
	[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
	safe_dir "$DIR"
	if [ -x "$DIR/usr/bin/python3" ] && [ -e "$DIR/.complete" ]; then
		return 0
	fi
	command -v debootstrap >/dev/null || die "debootstrap is missing (apt-get install -y debootstrap)"
	echo "trixie-torch: first use: debootstrap of Debian 13 with python3-torch into $DIR (about 1.5 GB from $MIRROR; 5 to 30 minutes)" >&2
	# Create each missing component ourselves, without following links
	# (mkdir fails on an existing name, link or not).
	local p="" c
	IFS=/ read -ra parts <<<"${DIR#/}"
	for c in "${parts[@]}"; do
		[ -n "$c" ] || continue
		p="$p/$c"
		if [ ! -e "$p" ] && [ ! -L "$p" ]; then
			mkdir -m 755 "$p"
		fi
		safe_dir "$p"
	done
	rm -f "$DIR/.complete"
	debootstrap --variant=minbase --include="$PKGS" trixie "$DIR" "$MIRROR" >"$DIR.log" 2>&1 ||
		die "debootstrap failed; see $DIR.log"
	safe_dir "$DIR"
	"$DIR/usr/bin/true" 2>/dev/null || true
	touch "$DIR/.complete"
	echo "trixie-torch: done ($(du -sh "$DIR" | cut -f1))" >&2
}

case ${1:-} in
ensure)
	ensure
	echo "$DIR"
	;;
run)
	shift
	ensure
	# Our own mount namespace: the binds vanish with it.
	exec unshare --mount --propagation private -- /bin/sh -ec '
		d=$1; shift
		mount -t proc proc "$d/proc"
		mount --rbind /sys "$d/sys"
		mount --rbind /dev "$d/dev"
		exec chroot "$d" "$@"
	' sh "$DIR" "$@"
	;;
*)
	die "usage: $0 ensure | run COMMAND [ARGS...]"
	;;
esac
