#!/usr/bin/env bash
# make test's checks in two lanes at once on the build machine's cores:
#
#   [go]       make unit-gpukit fuzz             gpukit's tests and fuzzing
#   [lessons]  make site grader-verify cuda      the notebooks, the site, the
#                                                grader, the cuda build
#
# and the grader's own tests (make unit-grader) in the lane with less to do:
# the go lane, unless the notebooks need not be executed (NOTEBOOKS_EXECUTED:
# CI executes them in the classroom image first), when the lessons lane has
# the time.
#
# Each lane runs its steps in turn; their lines are interleaved as they come,
# each with its lane's name. Exits 1 if either lane fails, after both end.
#
#   scripts/test-lanes.sh [MAKE]
set -uo pipefail
make=${1:-make}
# The two lanes keep more goroutines busy than there are cores: gpukit's
# kernel helpers must not wait awake for more work (gpukit/kernels,
# parallel.go), as OpenMP's threads wait passively when oversubscribed.
export GPUKIT_SPIN=${GPUKIT_SPIN:-0}
start=$SECONDS
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
lane() { # lane NAME TARGET...: runs make TARGET... with NAME before each line
	local name=$1 status
	shift
	"$make" --no-print-directory "$@" 2>&1 | tee "$logs/$name.log" | sed -u "s/^/[$name] /"
	status=${PIPESTATUS[0]}
	echo "test: the $name lane ended after $((SECONDS - start)) s (exit status $status)"
	return "$status"
}
# A failed lane's failures again, at the very end, where a reader of only
# the log's last lines (a CI summary) sees them: the failing tests and
# packages with the lines around them, and the last lines of the lane.
failures() { # failures NAME
	local log=$logs/$1.log
	echo "test: what failed in the $1 lane:"
	grep -n -B3 -A12 -E -e '^(--- FAIL|FAIL|panic:|fatal error:|make(\[[0-9]+\])?: \*\*\*)' -e 'Error Trace:|FAIL  |timed out' "$log" |
		head -n 150 | sed "s/^/[$1] /"
	echo "test: the $1 lane's last lines:"
	tail -n 15 "$log" | sed "s/^/[$1] /"
}
go_steps=(unit-gpukit unit-grader fuzz)
lessons_steps=(site grader-verify cuda)
if [ -n "${NOTEBOOKS_EXECUTED:-}" ]; then
	go_steps=(unit-gpukit fuzz)
	lessons_steps=(site grader-verify unit-grader cuda)
fi
go_steps+=(cross)
lane go "${go_steps[@]}" &
go_pid=$!
lane lessons "${lessons_steps[@]}" &
lessons_pid=$!
status=0
failed=()
wait "$go_pid" || { echo "test: the go lane failed (make ${go_steps[*]})"; failed+=(go); status=1; }
wait "$lessons_pid" || { echo "test: the lessons lane failed (make ${lessons_steps[*]})"; failed+=(lessons); status=1; }
for name in "${failed[@]}"; do
	failures "$name"
done
exit "$status"
