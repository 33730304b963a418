#!/usr/bin/env bash
# binfmt-arm64.sh makes this machine run linux/arm64 binaries under
# qemu-user-static through binfmt_misc: it installs Debian's
# qemu-user-static when its binfmt file is missing, mounts binfmt_misc and
# registers qemu-aarch64 with the F flag (the interpreter is opened once,
# so binaries in a chroot or a container run too). Sourced by
# scripts/cross.sh and scripts/image-build.sh:
#
#   binfmt_arm64 && echo ready || echo "$binfmt_arm64_why"
#
# returns 0 when arm64 binaries run here (also on an arm64 machine), else 1
# with the reason, and the command that fixes it, in binfmt_arm64_why.

binfmt_arm64() {
	local binfmt=/proc/sys/fs/binfmt_misc conf=/usr/lib/binfmt.d/qemu-aarch64.conf
	binfmt_arm64_why=
	binfmt_arm64_registered=
	# (A function defined here is global in bash: the name says whose it is.)
	binfmt_arm64_ready() { [ "$(head -n 1 "$binfmt/qemu-aarch64" 2>/dev/null)" = enabled ]; }
	case $(uname -m) in aarch64 | arm64) return 0 ;; esac
	binfmt_arm64_ready && return 0
	if [ "$(id -u)" != 0 ]; then
		binfmt_arm64_why="qemu-aarch64 is not registered with binfmt_misc, and registering it needs root (sudo apt-get install qemu-user-static; sudo mount -t binfmt_misc binfmt_misc $binfmt; then write the line of $conf into $binfmt/register)"
		return 1
	fi
	if [ ! -f "$conf" ]; then
		command -v apt-get >/dev/null 2>&1 || {
			binfmt_arm64_why="no $conf and no apt-get to install qemu-user-static"
			return 1
		}
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-user-static >/dev/null || {
			binfmt_arm64_why="apt-get install qemu-user-static failed"
			return 1
		}
	fi
	[ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
	# Registered but disabled (echo 0 > the entry): enable it; else register.
	if [ -e "$binfmt/qemu-aarch64" ]; then
		echo 1 >"$binfmt/qemu-aarch64" 2>/dev/null || true
	elif ! binfmt_arm64_ready; then
		grep -v '^#' "$conf" | grep . | head -n 1 >"$binfmt/register" 2>/dev/null || {
			binfmt_arm64_why="writing $conf into $binfmt/register failed (a container without the right to?)"
			return 1
		}
	fi
	binfmt_arm64_ready || {
		binfmt_arm64_why="qemu-aarch64 registered but not enabled ($binfmt/qemu-aarch64)"
		return 1
	}
	binfmt_arm64_registered=1
}
