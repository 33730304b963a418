#!/usr/bin/env bash
# make fuzz: every fuzz target of the module, briefly, one at a time.
#
# Each package's test binary is built once, with the fuzzing
# instrumentation (go test -c -fuzz), and each of its targets runs from
# that binary in the package's folder, with the flags go test -fuzz gives
# it: the same cache of interesting inputs ($GOCACHE/fuzz/PACKAGE), the
# seed corpus and any failing input in testdata/fuzz/TARGET. go test -fuzz
# builds and links the binary again for every target (it takes one target
# at a time): 35 targets in 18 packages, 59 s and 79 s of CPU with a build
# a target, 47 s and 65 s with one a package (2026-12-01).
#
# The budget is a count of inputs, not a duration: Go 1.26's fuzzer can
# fail with a spurious "context deadline exceeded" when a duration runs
# out (go.dev/issue/75804, fixed in Go 1.27). The targets are read from
# the source of the test files this build compiles (go test -list would
# compile every package's tests once more just to name them). One worker
# a target (FUZZPARALLEL; go test starts one a CPU): each worker first
# runs the seed corpus for its coverage, and 300 inputs are over before a
# second pays that back (FuzzGradScaler took 1.4 s of CPU with two, 1.0 s
# with one).
#
#   scripts/fuzz.sh    environment: GO (default go), FUZZTIME (300x),
#                      FUZZPARALLEL (1), GOBUILDFLAGS (-trimpath -ldflags=-w)
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
fuzztime=${FUZZTIME:-300x}
parallel=${FUZZPARALLEL:-1}
read -r -a buildflags <<<"${GOBUILDFLAGS--trimpath -ldflags=-w}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cache=$("$go" env GOCACHE)
case $cache in
off | "") cache=$tmp/cache ;; # go test -fuzz needs one; this run's is enough
esac
log=$tmp/log
bin=$tmp/fuzz.test # each package's in turn
targets=0
packages=0
# One line a package: its import path, its folder and its test files,
# separated by tabs (a folder may hold spaces).
"$go" list -f '{{.ImportPath}}{{"\t"}}{{.Dir}}{{range .TestGoFiles}}{{"\t"}}{{.}}{{end}}{{range .XTestGoFiles}}{{"\t"}}{{.}}{{end}}' ./... >"$tmp/packages"
while IFS=$'\t' read -r -a fields; do
	[ "${#fields[@]}" -gt 2 ] || continue
	pkg=${fields[0]} dir=${fields[1]}
	names=$(cd "$dir" && sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)([A-Za-z_][A-Za-z0-9_]* \*testing\.F).*/\1/p' "${fields[@]:2}")
	[ -n "$names" ] || continue
	echo "fuzz: $pkg: building its tests with fuzzing instrumentation"
	"$go" test "${buildflags[@]}" -c -fuzz . -o "$bin" "$pkg" >"$log" 2>&1 </dev/null || {
		cat "$log"
		exit 1
	}
	packages=$((packages + 1))
	for target in $names; do
		echo "fuzz: $pkg $target ($fuzztime)"
		(cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^$target\$" -test.fuzztime "$fuzztime" \
			-test.parallel "$parallel" -test.fuzzcachedir "$cache/fuzz/$pkg" \
			-test.timeout 10m -test.paniconexit0) >"$log" 2>&1 </dev/null || {
			cat "$log"
			echo "fuzz: $pkg $target failed (to run it again: go test -run '^\$' -fuzz '^$target\$' $pkg)"
			exit 1
		}
		targets=$((targets + 1))
	done
done <"$tmp/packages"
echo "fuzz: $targets targets of $packages packages: ok"
