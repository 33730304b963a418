#!/usr/bin/env bash
# Tests scripts/test-lanes.sh with stand-ins for make: with `true` every
# step of both lanes runs and passes, and on Linux the last line says how
# busy the machine's CPUs were; with `false` each lane stops at its first
# step, and the run fails and says which lanes failed.
#
#   bash scripts/test-lanes-test.sh
set -uo pipefail
cd "$(dirname "$0")/.."
failures=0
fail() {
	echo "FAIL $*"
	failures=$((failures + 1))
}
out=$(bash scripts/test-lanes.sh true 2>&1)
status=$?
[ "$status" = 0 ] || fail "test-lanes.sh true: exit status $status, want 0"
for step in unit-gpukit unit-grader cross cuda site grader-verify fuzz; do
	grep -q "test: make $step took [0-9]* s ([0-9]* s of CPU)" <<<"$out" || fail "test-lanes.sh true: no line for make $step"
done
if [ -r /proc/stat ]; then
	grep -qE "^test: the machine's [0-9]+ CPUs were busy for [0-9]+ s and idle for [0-9]+ s while the lanes ran" <<<"$out" ||
		fail "test-lanes.sh true: no line on how busy the machine was"
fi
out=$(bash scripts/test-lanes.sh false 2>&1)
status=$?
[ "$status" = 1 ] || fail "test-lanes.sh false: exit status $status, want 1"
for lane in go lessons; do
	grep -q "test: the $lane lane failed" <<<"$out" || fail "test-lanes.sh false: the $lane lane's failure not reported"
done
grep -q "took" <<<"$out" && fail "test-lanes.sh false: a step after a failed one ran"
[ "$failures" = 0 ] && echo "test-lanes: ok" && exit 0
echo "$out" | tail -n 20
exit 1
