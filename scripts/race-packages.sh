#!/usr/bin/env bash
# Splits packages by whether their tests run under the race detector: a
# package is raced when its own code or tests can run concurrently, that
# is, when it or its tests import sync or sync/atomic, start a goroutine
# (a line that begins with a go statement) or run tests in parallel
# (t.Parallel). The others hold no lock and start nothing: what they call
# concurrently (gpukit/kernels' parallel loops, the simulated card's
# streams) is raced in its own package's tests. Under -race a package's
# tests run 2-10 times slower and its test binary is compiled and linked
# again. make unit-gpukit here, the old split (every package raced) and
# this one in turn, twice: 183 → 167 s and 153 → 137 s of CPU (97 → 92
# s and 81 → 72 s of wall time).
#
# A raced package whose tests import gpukit/internal/racetest has tests
# that skip or shrink themselves under the detector (one goroutine's work
# on much data): it is listed for both passes, so that those tests run
# somewhere. (Listed by hand before, gpukit/kernels' dense checks and
# cmd/memtrace's whole-snapshot readers ran in neither.)
#
#   scripts/race-packages.sh race|plain PACKAGE_PATTERN...
set -euo pipefail
want=${1:?usage: race-packages.sh race|plain PACKAGE_PATTERN...}
shift
case $want in race | plain) ;; *)
	echo "race-packages.sh: want race or plain, not $want" >&2
	exit 2
	;;
esac
go list -f '{{.ImportPath}}|{{.Dir}}|{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}|{{join .GoFiles " "}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}' "$@" |
	while IFS='|' read -r pkg dir imports files; do
		kind=plain
		case " $imports " in
		*" sync "* | *" sync/atomic "*) kind=race ;;
		*)
			# shellcheck disable=SC2086 # a list of file names
			if [ -n "${files// /}" ] && (cd "$dir" && grep -qE '^[[:space:]]*go [A-Za-z_(]|\.Parallel\(\)' $files); then
				kind=race
			fi
			;;
		esac
		case " $imports " in
		*" github.com/gpumem/course/gpukit/internal/racetest "*) [ "$kind" = race ] && kind=both ;;
		esac
		if [ "$kind" = "$want" ] || [ "$kind" = both ]; then echo "$pkg"; fi
	done
