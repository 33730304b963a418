#!/usr/bin/env bash
# Installs the CUDA headers and driver stub that the `cuda` build tag compiles
# against (Debian's nvidia-cuda-dev and libcuda1, CUDA 11.8 on bookworm). They
# live in Debian's contrib and non-free components, which this script enables.
# Nothing here needs a GPU: the cuda build is compiled and vetted, not run.
#
# What it changes on the system (as root, Debian only):
#   - writes /etc/apt/sources.list.d/gpukit-contrib-nonfree.sources: the
#     contrib and non-free components of the Debian mirror that already
#     serves this release's main component (deb.debian.org when none does),
#     for the release and its -updates suite; an existing copy with other
#     content (for instance one written by an older, broken version of this
#     script) is replaced, and nothing else in /etc/apt is touched;
#   - runs apt-get update and installs nvidia-cuda-dev and libcuda1 (without
#     recommended packages).
# It is idempotent: when cuda.h and libcuda are present it changes nothing,
# and a second run rewrites nothing.
#
# The functions below can be sourced (scripts/install-cuda-headers-test.sh
# does, against fixture folders) without running the installation.
set -euo pipefail

# gpukit_sources_name is the file this script owns in sources.list.d.
gpukit_sources_name=gpukit-contrib-nonfree.sources

# find_debian_mirror DIR LIST CODENAME prints the URI of the first enabled
# "deb" source, in DIR/*.sources (deb822) or LIST and DIR/*.list (one-line
# format, options in brackets allowed), whose suites include CODENAME and
# whose components include main: the machine's Debian mirror. Third-party
# repositories do not serve CODENAME's main component and are skipped, and
# so is the file this script writes. It prints nothing when none is found.
find_debian_mirror() {
	local dir=$1 list=$2 codename=$3 f out
	local files=()
	for f in "$dir"/*.sources; do
		[ -f "$f" ] && [ "$(basename "$f")" != "$gpukit_sources_name" ] && files+=("$f")
	done
	if [ ${#files[@]} -gt 0 ]; then
		out=$(awk -v want="$codename" '
			function flush() {
				if (types ~ /(^| )deb( |$)/ && enabled != "no" && uri != "" &&
					(" " suites " ") ~ (" " want " ") && (" " comps " ") ~ / main /) {
					print uri; found = 1; exit
				}
				types = ""; uri = ""; suites = ""; comps = ""; enabled = ""
			}
			FNR == 1 { flush() }
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			/^[ \t]/ { # a continuation line of the previous field
				val = $0; gsub(/[ \t]+/, " ", val); sub(/^ /, "", val); sub(/ $/, "", val)
				if (key == "types") types = types " " val
				else if (key == "uris" && uri == "") { uri = val; sub(/ .*/, "", uri) }
				else if (key == "suites") suites = suites " " val
				else if (key == "components") comps = comps " " val
				next
			}
			{
				line = $0
				key = line; sub(/:.*/, "", key); gsub(/[ \t]/, "", key); key = tolower(key)
				val = line; sub(/^[^:]*:[ \t]*/, "", val); gsub(/[ \t]+/, " ", val); sub(/ $/, "", val)
				if (key == "types") types = val
				else if (key == "uris") { uri = val; sub(/ .*/, "", uri) }
				else if (key == "suites") suites = val
				else if (key == "components") comps = val
				else if (key == "enabled") enabled = tolower(val)
			}
			END { if (!found) flush() }
		' "${files[@]}")
		if [ -n "$out" ]; then
			echo "$out"
			return 0
		fi
	fi
	local lists=()
	[ -f "$list" ] && lists+=("$list")
	for f in "$dir"/*.list; do
		[ -f "$f" ] && lists+=("$f")
	done
	[ ${#lists[@]} -gt 0 ] || return 0
	awk -v want="$codename" '
		/^[ \t]*deb[ \t]/ {
			line = $0
			sub(/#.*/, "", line)
			sub(/^[ \t]*deb[ \t]+/, "", line)
			if (line ~ /^\[/) { sub(/^\[[^]]*\][ \t]*/, "", line) }
			n = split(line, f, /[ \t]+/)
			if (n < 3 || f[2] != want) next
			for (i = 3; i <= n; i++) if (f[i] == "main") { print f[1]; exit }
		}
	' "${lists[@]}"
}

# contrib_sources MIRROR CODENAME prints the deb822 stanza this script
# installs.
contrib_sources() {
	cat <<SOURCES
# Written by gpukit's scripts/install-cuda-headers.sh: Debian's contrib and
# non-free components, for nvidia-cuda-dev and libcuda1. Safe to delete.
Types: deb
URIs: $1
Suites: $2 $2-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
}

# write_contrib_sources DIR LIST CODENAME writes DIR/$gpukit_sources_name
# for the mirror find_debian_mirror finds, replacing a file with other
# content through a temporary file and a rename, and leaving an identical
# one untouched. It prints what it did.
write_contrib_sources() {
	local dir=$1 list=$2 codename=$3 mirror target tmp
	mirror=$(find_debian_mirror "$dir" "$list" "$codename")
	case "$mirror" in
	http://* | https://* | file:/* | mirror+* | tor+*) ;;
	*) mirror=http://deb.debian.org/debian ;;
	esac
	target=$dir/$gpukit_sources_name
	if [ -f "$target" ] && [ "$(cat "$target")" = "$(contrib_sources "$mirror" "$codename")" ]; then
		echo "cuda headers: contrib non-free already enabled from $mirror"
		return 0
	fi
	tmp=$(mktemp "$dir/.$gpukit_sources_name.XXXXXX")
	contrib_sources "$mirror" "$codename" >"$tmp"
	chmod 0644 "$tmp"
	mv -f "$tmp" "$target"
	echo "cuda headers: enabled contrib non-free from $mirror ($target)"
}

main() {
	if [ -f /usr/include/cuda.h ] && ls /usr/lib/x86_64-linux-gnu/libcuda.so* >/dev/null 2>&1; then
		echo "cuda headers: already installed"
		return 0
	fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "cuda headers: not installed, and installing them needs root." >&2
		echo "  run: sudo bash scripts/install-cuda-headers.sh   (Debian: nvidia-cuda-dev libcuda1 from contrib non-free)" >&2
		return 1
	fi
	. /etc/os-release
	if [ "${ID:-}" != debian ] || [ -z "${VERSION_CODENAME:-}" ]; then
		echo "cuda headers: automatic install supports Debian only (this is ${ID:-unknown})." >&2
		echo "  install your distribution's CUDA 11.8 or 12.x toolkit headers (cuda.h) and libcuda, then rerun make test." >&2
		return 1
	fi
	write_contrib_sources /etc/apt/sources.list.d /etc/apt/sources.list "$VERSION_CODENAME"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nvidia-cuda-dev libcuda1 >/dev/null
	test -f /usr/include/cuda.h || {
		echo "cuda headers: nvidia-cuda-dev installed but /usr/include/cuda.h is missing" >&2
		return 1
	}
	echo "cuda headers: installed ($(dpkg-query -W -f='${Version}' nvidia-cuda-dev))"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	main "$@"
fi
