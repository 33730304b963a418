#!/usr/bin/env bash
# test-shard.sh runs shard.sh for every index over fake submission folders
# (odd names included) and checks that each submission lands in exactly one
# shard, that shards differ in size by at most one, and that bad input is
# refused.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/subs"
for i in $(seq 1 41); do mkdir "$tmp/subs/student-$i"; done
mkdir "$tmp/subs/name with spaces" "$tmp/subs/$(printf 'new\nline')" "$tmp/subs/-dash"
touch "$tmp/subs/not-a-submission.txt"
total=$(find "$tmp/subs" -mindepth 1 -maxdepth 1 -type d -print0 | tr -cd '\0' | wc -c)
for count in 1 3 4 7 50; do
	: >"$tmp/all"
	min=999999 max=0
	for index in $(seq 0 $((count - 1))); do
		bash "$here/shard.sh" "$index" "$count" "$tmp/subs" >"$tmp/shard"
		n=$(tr -cd '\0' <"$tmp/shard" | wc -c)
		cat "$tmp/shard" >>"$tmp/all"
		((n < min)) && min=$n
		((n > max)) && max=$n
	done
	listed=$(tr -cd '\0' <"$tmp/all" | wc -c)
	unique=$(sort -zu "$tmp/all" | tr -cd '\0' | wc -c)
	[ "$listed" = "$total" ] && [ "$unique" = "$total" ] || {
		echo "test-shard: FAIL with $count shards: $listed listed, $unique distinct, want $total each" >&2
		exit 1
	}
	((max - min <= 1)) || {
		echo "test-shard: FAIL with $count shards: sizes from $min to $max" >&2
		exit 1
	}
	echo "test-shard: ok    $count shards: each of the $total submissions in exactly one (sizes $min to $max)"
done
for bad in "3 3" "-1 2" "0 0" "x 2"; do
	# shellcheck disable=SC2086
	if bash "$here/shard.sh" $bad "$tmp/subs" >/dev/null 2>&1; then
		echo "test-shard: FAIL: shard.sh $bad was accepted" >&2
		exit 1
	fi
done
echo "test-shard: ok    out-of-range and malformed indexes are refused"
