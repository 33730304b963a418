#!/usr/bin/env bash
# Tests the apt-sources handling of install-cuda-headers.sh against fixture
# folders in a temporary directory; it never reads or writes /etc/apt and
# needs no root.
#
#   bash scripts/install-cuda-headers-test.sh
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=install-cuda-headers.sh
. "$here/install-cuda-headers.sh"
set +e

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# fixture NAME: a fresh sources.list.d folder and sources.list path.
fixture() {
	dir=$work/$1/sources.list.d
	list=$work/$1/sources.list
	mkdir -p "$dir"
}

expect_mirror() {
	local name=$1 want=$2 got
	got=$(find_debian_mirror "$dir" "$list" bookworm)
	if [ "$got" != "$want" ]; then
		echo "FAIL $name: mirror '$got', want '$want'"
		failures=$((failures + 1))
	else
		echo "ok   $name"
	fi
}

# deb822 with comments, a security stanza first, and another mirror.
fixture deb822
cat >"$dir/debian.sources" <<'EOF'
Types: deb
# http://snapshot.debian.org/archive/debian-security/20250520T000000Z
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb deb-src
URIs: http://ftp.fr.debian.org/debian http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
expect_mirror "deb822 with comments and a security stanza" http://ftp.fr.debian.org/debian

# A third-party repository whose file sorts first, and a disabled stanza.
fixture third-party
cat >"$dir/00-nodesource.sources" <<'EOF'
Types: deb
URIs: https://deb.nodesource.com/node_20.x
Suites: nodistro
Components: main
Architectures: amd64
EOF
cat >"$dir/10-off.sources" <<'EOF'
Enabled: no
Types: deb
URIs: http://old.example.org/debian
Suites: bookworm
Components: main
EOF
cat >"$dir/debian.sources" <<'EOF'
Types: deb
URIs: http://mirror.example.net/debian/
Suites:
 bookworm
Components: main contrib
EOF
expect_mirror "third-party first, a disabled stanza, a continuation line" http://mirror.example.net/debian/

# One-line sources with options in brackets, and a third-party .list first.
fixture one-line
cat >"$list" <<'EOF'
# deb cdrom:[Debian GNU/Linux 12]/ bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main non-free-firmware
deb http://security.debian.org/debian-security bookworm-security main
EOF
cat >"$dir/a-docker.list" <<'EOF'
deb [arch=amd64] https://download.docker.com/linux/debian bookworm stable
EOF
expect_mirror "one-line [arch=amd64] sources" http://deb.debian.org/debian

# Our own broken file from an older version is neither used nor kept.
fixture repair
cat >"$dir/$gpukit_sources_name" <<'EOF'
Types: deb
URIs: [arch=amd64
Suites: bookworm bookworm-updates
Components: contrib non-free
EOF
cat >"$list" <<'EOF'
deb [arch=amd64] http://mirror.example.net/debian bookworm main
EOF
expect_mirror "own broken file ignored" http://mirror.example.net/debian
write_contrib_sources "$dir" "$list" bookworm >/dev/null
if grep -q '^URIs: http://mirror.example.net/debian$' "$dir/$gpukit_sources_name" && ! grep -q '\[arch' "$dir/$gpukit_sources_name"; then
	echo "ok   broken file repaired"
else
	echo "FAIL broken file not repaired:"; cat "$dir/$gpukit_sources_name"
	failures=$((failures + 1))
fi

# Idempotent: a second run leaves the file as it is (same inode, same bytes).
before=$(stat -c '%i %Y' "$dir/$gpukit_sources_name")
out=$(write_contrib_sources "$dir" "$list" bookworm)
after=$(stat -c '%i %Y' "$dir/$gpukit_sources_name")
if [ "$before" = "$after" ] && [[ $out == *"already enabled"* ]]; then
	echo "ok   second run changes nothing"
else
	echo "FAIL second run: '$out', file $before -> $after"
	failures=$((failures + 1))
fi
if [ "$(find "$dir" -name '.*' -type f | wc -l)" -ne 0 ]; then
	echo "FAIL temporary files left in $dir"
	failures=$((failures + 1))
fi

# No Debian source at all: deb.debian.org.
fixture none
write_contrib_sources "$dir" "$list" bookworm >/dev/null
if grep -q '^URIs: http://deb.debian.org/debian$' "$dir/$gpukit_sources_name" &&
	grep -q '^Suites: bookworm bookworm-updates$' "$dir/$gpukit_sources_name"; then
	echo "ok   default mirror"
else
	echo "FAIL default mirror:"; cat "$dir/$gpukit_sources_name"
	failures=$((failures + 1))
fi

if [ "$failures" -ne 0 ]; then
	echo "install-cuda-headers: $failures test(s) failed"
	exit 1
fi
echo "install-cuda-headers: all tests passed"
