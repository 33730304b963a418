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
# The two lanes keep more goroutines busy than there are cores: gpukit's
# kernel helpers must not wait awake for more work (gpukit/kernels,
# parallel.go), as OpenMP's threads wait passively when oversubscribed.
export GPUKIT_SPIN=${GPUKIT_SPIN:-0}
start=$SECONDS
lane() { # lane NAME TARGET...: runs make TARGET... with NAME before each line
	local name=$1 status
	shift
	"$make" --no-print-directory "$@" 2>&1 | sed -u "s/^/[$name] /"
	status=${PIPESTATUS[0]}
	echo "test: the $name lane ended after $((SECONDS - start)) s (exit status $status)"
	return "$status"
}
lane go unit fuzz &
go_pid=$!
lane lessons site grader-verify cuda &
lessons_pid=$!
status=0
wait "$go_pid" || { echo "test: the go lane failed (make unit fuzz)"; status=1; }
wait "$lessons_pid" || { echo "test: the lessons lane failed (make site grader-verify cuda)"; status=1; }
exit "$status"
