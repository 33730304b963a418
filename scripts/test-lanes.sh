#!/usr/bin/env bash
# make test's checks in two lanes at once on the build machine's cores:
#
#   [go]       make unit-gpukit unit-grader      gpukit's and the grader's
#              cross cuda                        tests, the other platforms'
#                                                builds, the cuda build
#   [lessons]  make site grader-verify fuzz      the notebooks, the site, the
#                                                exercises' verification,
#                                                fuzzing
#
# The lanes take about as long as each other when CI has executed the
# notebooks in the classroom image first (NOTEBOOKS_EXECUTED); without
# that the lessons lane executes the notebooks too and is the longer one.
# Measured on a clean clone (2 cores, both lanes at once, 2026-11-30):
# unit-gpukit 182 s, unit-grader 247 s, cross 106 s; site 49 s,
# grader-verify 398 s, cuda 80 s, fuzz 47 s. Then unit-grader's builds
# stopped reading the whole build cache (grader/build.go,
# removeNewCacheEntries; its tests 211 → 119 s alone), and cuda went to
# this lane from the lessons lane, by then the longer: on the next clean
# clone the go lane took 439 s, the lessons lane 410 s.
#
# CI's make image-test runs alone before the lanes. As the first step of
# one lane (the other steps packed again, the longest first) it took 624 s
# instead of 256 (its notebooks 254 s instead of 117), and a clean clone's
# CI 983 s instead of 919 (2 cores, 2026-11-30): the lanes keep both cores
# busy already.
#
# make test ran setup before the lanes; their steps (make site needs setup)
# do not run it again (SETUP_DONE).
#
# Each lane runs its steps in turn, saying how long each took; their lines
# are interleaved as they come, each with its lane's name. Exits 1 if
# either lane fails, after both end.
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
# cpu_seconds VAR sets VAR to the user and system time of this shell's
# finished children, whole seconds: a step's CPU time, beside its wall
# time, says what it costs a machine whose cores the other lane shares.
# (times runs in this shell, its output to a file: in a pipe or $(...) it
# would run in a child, which has no children yet.)
cpu_seconds() {
	local f=$logs/times.$BASHPID
	times >"$f"
	printf -v "$1" '%d' "$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); t += p[1] * 60 + p[2] } printf "%d", t }' "$f")"
}
lane() { # lane NAME TARGET...: runs make TARGET in turn, NAME before each line
	local name=$1 status
	shift
	steps() {
		local step t0 cpu0 cpu1
		for step in "$@"; do
			t0=$SECONDS
			cpu_seconds cpu0
			"$make" --no-print-directory SETUP_DONE=1 "$step" || return
			cpu_seconds cpu1
			echo "test: make $step took $((SECONDS - t0)) s ($((cpu1 - cpu0)) s of CPU)"
		done
	}
	steps "$@" 2>&1 | tee "$logs/$name.log" | sed -u "s/^/[$name] /"
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
# machine_ticks prints the clock ticks all CPUs spent busy (user, nice,
# system, interrupts) and idle (idle, iowait) since boot, from
# /proc/stat's first line; nothing where there is no /proc/stat (macOS).
# A step's CPU time above counts the processes it waited for; the
# kernel's work for the grader's sandboxes (setting up and tearing down
# their namespaces) is partly charged to none of them, so this says how
# busy the machine really was (docs/instructors.md, the CI section).
machine_ticks() {
	[ -r /proc/stat ] && awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8, $5 + $6; exit }' /proc/stat
}
read -r busy0 idle0 <<<"$(machine_ticks)"
go_steps=(unit-gpukit unit-grader cross cuda)
lessons_steps=(site grader-verify fuzz)
lane go "${go_steps[@]}" &
go_pid=$!
lane lessons "${lessons_steps[@]}" &
lessons_pid=$!
status=0
failed=()
wait "$go_pid" || { echo "test: the go lane failed (make ${go_steps[*]})"; failed+=(go); status=1; }
wait "$lessons_pid" || { echo "test: the lessons lane failed (make ${lessons_steps[*]})"; failed+=(lessons); status=1; }
read -r busy1 idle1 <<<"$(machine_ticks)"
if [ -n "${busy0:-}" ] && [ -n "${busy1:-}" ]; then
	hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
	busy=$(((busy1 - busy0) / hz)) idle=$(((idle1 - idle0) / hz))
	echo "test: the machine's $(nproc) CPUs were busy for $busy s and idle for $idle s while the lanes ran ($((SECONDS - start)) s; /proc/stat, every process and the kernel's own work)"
fi
for name in "${failed[@]}"; do
	failures "$name"
done
exit "$status"
