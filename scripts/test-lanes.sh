#!/usr/bin/env bash
# make test's checks in two lanes at once on the build machine's cores:
#
#   [go]       make unit fuzz                    the Go tests and fuzzing
#   [lessons]  make site grader-verify cuda      the notebooks, the site, the
#                                                grader, the cuda build
#
# Each lane runs its steps in turn; their lines are interleaved as they come,
# each with its lane's name. Exits 1 if either lane fails, after both end.
#
#   scripts/test-lanes.sh [MAKE]
set -uo pipefail
make=${1:-make}
lane() { # lane NAME TARGET...: runs make TARGET... with NAME before each line
	local name=$1
	shift
	"$make" --no-print-directory "$@" 2>&1 | sed -u "s/^/[$name] /"
	return "${PIPESTATUS[0]}"
}
start=$SECONDS
lane go unit fuzz &
go_pid=$!
lane lessons site grader-verify cuda &
lessons_pid=$!
status=0
wait "$go_pid" || { echo "test: the go lane failed (make unit fuzz)"; status=1; }
echo "test: go lane done after $((SECONDS - start)) s"
wait "$lessons_pid" || { echo "test: the lessons lane failed (make site grader-verify cuda)"; status=1; }
echo "test: lessons lane done after $((SECONDS - start)) s"
exit "$status"
