#!/usr/bin/env bash
# make cross (issue 38): the course builds for the laptops students bring,
# and its kernels and grader work on arm64.
#
#  0. scripts/setup-macos-test.sh: setup.sh's macOS branch with fakes.
#  1. go build ./... for darwin/arm64, darwin/amd64, linux/arm64 and
#     windows/amd64 (gpukit, the grader, every command, the exercises'
#     stubs), with the Makefile's build flags (GOBUILDFLAGS); go vet of the grader
#     for darwin and windows (its Linux-only code lives in _linux.go files;
#     its tests must type-check everywhere).
#  1b. The grader's runner for macOS (sandbox_other.go and the files beside
#     it), built on Linux through a go build -overlay that swaps it in for
#     the Linux sandbox, grades a reference 10/10 (about 12 s of CPU).
#  1c. The grader's runner for Windows: the sandbox package's Windows
#     tests (a timeout kills the test's whole process tree, through its job
#     object), built for windows/amd64 and run under Wine when a Wine that
#     runs Go 1.26's binaries is here (Wine ≥ 9: Debian 12's Wine 8 has no
#     bcryptprimitives.dll): $WINE, or the one installed in the trixie
#     chroot of scripts/trixie-torch.sh (apt-get install wine64 there);
#     otherwise one SKIP line. About 10 s.
#  2. On linux/arm64, under qemu-user-static through binfmt_misc (installed
#     and registered here when missing and this runs as root; otherwise one
#     SKIP line, and only this step is skipped):
#       - go test -short ./gpukit/kernels: every assembly kernel (amd64's,
#         and arm64's where they exist) and the Go reference it must equal
#         bit for bit live there, with their tests; about 25 s of CPU under
#         qemu here (82 s before -short shrank their large tables: the
#         large cases' float64 references are Go, the same everywhere).
#         Not gpukit/tensor -short (53 s of CPU under qemu, past the 60 s
#         budget): its code above the kernels is the same Go on every
#         architecture, and make unit runs it.
#       - the grader, built for arm64, grading 01-shared-storage's
#         reference (it must score full marks: the hidden tests built for
#         arm64 and run in the grader's sandbox) and checking its stub (the
#         public tests run and fail, as a student's first check does).
#
#   scripts/cross.sh        GO names the go command (default go), GOBUILDFLAGS
#                           its build flags (default -trimpath -ldflags=-w)
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
read -r -a buildflags <<<"${GOBUILDFLAGS--trimpath -ldflags=-w}"
start=$SECONDS
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bash scripts/setup-macos-test.sh | tail -n 1
for target in darwin/arm64 darwin/amd64 linux/arm64 windows/amd64; do
	GOOS=${target%/*} GOARCH=${target#*/} "$go" build "${buildflags[@]}" ./...
	echo "cross: $target: go build ./... ok"
done
grader_pkgs=$("$go" list ./grader/... | grep -v /grader/hidden/)
for goos in darwin windows; do
	# shellcheck disable=SC2086 # one package a word
	GOOS=$goos "$go" vet "${buildflags[@]}" $grader_pkgs
	echo "cross: $goos: go vet of the grader ok"
done

# --- the grader's runner for macOS and Windows, on Linux ---------------------
# A build overlay swaps the off-Linux files in for the Linux ones (their
# build lines dropped, the Linux files emptied), so that the runner macOS
# uses (sandbox_other.go, process_unix.go, build_other.go) grades a
# reference 10/10 here: the pipes, the ulimit wrapper and the verdicts.
ovl=$tmp/overlay
mkdir -p "$ovl"
entries=()
for f in grader/sandbox/sandbox_linux.go grader/sandbox/cgroup_linux.go grader/build_linux.go grader/cmd/grader/term_linux.go; do
	printf '//go:build ignore\n\npackage %s\n' "$(sed -n 's/^package //p' "$f" | head -n 1)" >"$ovl/${f//\//_}"
	entries+=("\"$PWD/$f\": \"$ovl/${f//\//_}\"")
done
for f in grader/sandbox/sandbox_other.go grader/sandbox/process_unix.go grader/build_other.go grader/build_unix.go grader/cmd/grader/term_other.go; do
	sed '1{/^\/\/go:build /d}' "$f" >"$ovl/${f//\//_}"
	entries+=("\"$PWD/$f\": \"$ovl/${f//\//_}\"")
done
(
	IFS=,
	echo "{\"Replace\": {${entries[*]}}}"
) >"$ovl/overlay.json"
"$go" build "${buildflags[@]}" -overlay "$ovl/overlay.json" -o "$tmp/grader-other" ./grader/cmd/grader
"$tmp/grader-other" grade --sandbox none --exercise 01-shared-storage --submission solutions/01-shared-storage \
	--format text >"$tmp/other.txt" 2>&1 || { cat "$tmp/other.txt"; exit 1; }
if ! grep -q '^score 10/10 ' "$tmp/other.txt" || ! grep -q 'tests run without a sandbox' "$tmp/other.txt"; then
	cat "$tmp/other.txt"
	echo "cross: the grader's off-Linux runner (run here through an overlay) did not give 01-shared-storage's reference full marks"
	exit 1
fi
echo "cross: the grader's off-Linux runner, on Linux through an overlay: grade 10/10 ok"

# --- windows/amd64 under Wine: the grader's sandbox tests -------------------
trixie=${TRIXIE_TORCH:-/var/cache/gpumem/trixie-torch}
wine=""
if [ -n "${WINE:-}" ]; then
	wine="under $WINE"
elif [ "$(id -u)" = 0 ] && [ -x "$trixie/usr/lib/wine/wine64" ] && [ ! -L "$trixie" ]; then
	wine="under Wine (the trixie chroot's)"
fi
if [ -n "$wine" ]; then
	GOOS=windows "$go" test "${buildflags[@]}" -c -o "$tmp/sandbox.exe" ./grader/sandbox
	if [ -n "${WINE:-}" ]; then
		WINEDEBUG=-all "$WINE" "$tmp/sandbox.exe" -test.v >"$tmp/wine.txt" 2>&1 || { cat "$tmp/wine.txt"; exit 1; }
	else
		run=$(mktemp -d "$trixie/tmp/cross-XXXXXX")
		cp "$tmp/sandbox.exe" "$run/"
		status=0
		bash scripts/trixie-torch.sh run env -i HOME=/root WINEDEBUG=-all WINEPREFIX=/root/.wine-gpumem-cross \
			/usr/lib/wine/wine64 "${run#"$trixie"}/sandbox.exe" -test.v >"$tmp/wine.txt" 2>&1 || status=$?
		rm -rf "$run"
		[ "$status" = 0 ] || { cat "$tmp/wine.txt"; exit 1; }
	fi
	grep -q '^--- PASS: TestTimeoutKillsTheTree' "$tmp/wine.txt" || { cat "$tmp/wine.txt"; exit 1; }
	echo "cross: windows/amd64 $wine: the grader's sandbox tests ok"
else
	echo "cross: SKIP the Windows sandbox tests: no Wine that runs Go 1.26's binaries (set WINE, or apt-get install wine64 in the chroot of scripts/trixie-torch.sh)"
fi

# --- linux/arm64 under qemu ------------------------------------------------
skip() {
	echo "cross: SKIP the linux/arm64 tests: $*"
	echo "cross: ok ($((SECONDS - start)) s; arm64 tests skipped)"
	exit 0
}
# shellcheck source=scripts/binfmt-arm64.sh
. scripts/binfmt-arm64.sh
binfmt_arm64 || skip "$binfmt_arm64_why"
[ -z "$binfmt_arm64_registered" ] || echo "cross: registered qemu-aarch64 with binfmt_misc"

arm_start=$SECONDS
GOARCH=arm64 "$go" test "${buildflags[@]}" -count=1 -short ./gpukit/kernels
GOARCH=arm64 "$go" build "${buildflags[@]}" -o "$tmp/grader" ./grader/cmd/grader
# The grader passes its environment to go: GOARCH=arm64 builds the tests
# for arm64 too, which binfmt runs under qemu.
GOARCH=arm64 "$tmp/grader" grade --exercise 01-shared-storage --submission solutions/01-shared-storage \
	--format text >"$tmp/grade.txt" 2>&1 || { cat "$tmp/grade.txt"; exit 1; }
grep -q '^score 10/10 ' "$tmp/grade.txt" || {
	cat "$tmp/grade.txt"
	echo "cross: on arm64 the grader did not give 01-shared-storage's reference full marks"
	exit 1
}
GOARCH=arm64 "$tmp/grader" check 01-shared-storage >"$tmp/check.txt" 2>&1 || { cat "$tmp/check.txt"; exit 1; }
grep -q '^0 of [1-9][0-9]* public tests pass' "$tmp/check.txt" || {
	cat "$tmp/check.txt"
	echo "cross: on arm64 the grader's check of 01-shared-storage's stub did not run its public tests"
	exit 1
}
echo "cross: linux/arm64 under qemu: gpukit/kernels -short, grade 10/10 and check ok ($((SECONDS - arm_start)) s)"
echo "cross: ok ($((SECONDS - start)) s)"
