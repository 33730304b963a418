#!/usr/bin/env bash
# shard.sh lists the submissions that one pod of the batch-grading Job grades:
# every submission folder directly under SUBMISSIONS, in byte order, whose
# position modulo COUNT is INDEX. Each submission lands in exactly one shard
# (deploy/k8s/test-shard.sh checks it), and the split is stable as long as the
# folder does not change while the Job runs.
#
#   shard.sh INDEX COUNT SUBMISSIONS
#
# In the Job, INDEX is $JOB_COMPLETION_INDEX and COUNT the Job's completions.
set -euo pipefail
[ $# -eq 3 ] || {
	echo "usage: shard.sh INDEX COUNT SUBMISSIONS" >&2
	exit 2
}
index=$1 count=$2 dir=$3
[[ "$index" =~ ^[0-9]+$ && "$count" =~ ^[1-9][0-9]*$ ]] || {
	echo "shard: INDEX must be a whole number and COUNT a positive one (got '$index' and '$count')" >&2
	exit 2
}
[ "$index" -lt "$count" ] || {
	echo "shard: INDEX $index is out of range for COUNT $count (0 to $((count - 1)))" >&2
	exit 2
}
[ -d "$dir" ] || {
	echo "shard: no submissions folder at $dir" >&2
	exit 2
}
# -print0 and LC_ALL=C: names with spaces or newlines, and one order everywhere.
find "$dir" -mindepth 1 -maxdepth 1 -type d -print0 | LC_ALL=C sort -z |
	awk -v RS='\0' -v ORS='\0' -v i="$index" -v n="$count" '(NR - 1) % n == i'
