#!/usr/bin/env bash
# Tests scripts/race-packages.sh on the course's own packages: every
# gpukit package is listed for at least one pass, and every package whose
# tests import gpukit/internal/racetest (tests that skip or shrink
# themselves under the race detector) is listed for the plain pass, so
# that those tests run in make unit-gpukit.
#
#   bash scripts/race-packages-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
race=$(bash scripts/race-packages.sh race ./gpukit/...)
plain=$(bash scripts/race-packages.sh plain ./gpukit/...)
failures=0
while read -r pkg imports; do
	in_race=0 in_plain=0
	grep -qxF "$pkg" <<<"$race" && in_race=1
	grep -qxF "$pkg" <<<"$plain" && in_plain=1
	if [ $in_race = 0 ] && [ $in_plain = 0 ]; then
		echo "FAIL $pkg: in neither pass"
		failures=$((failures + 1))
	fi
	case " $imports " in *" github.com/gpumem/course/gpukit/internal/racetest "*)
		if [ $in_plain = 0 ]; then
			echo "FAIL $pkg: its tests skip or shrink under -race (racetest) but it is not in the plain pass"
			failures=$((failures + 1))
		fi
		;;
	esac
done < <(go list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./gpukit/...)
if bash scripts/race-packages.sh neither ./gpukit/... 2>/dev/null; then
	echo "FAIL race-packages.sh accepted 'neither'"
	failures=$((failures + 1))
fi
if [ $failures -gt 0 ]; then
	echo "race-packages: $failures failures"
	exit 1
fi
echo "race-packages: ok (every package in a pass; those whose tests use racetest in the plain one)"
