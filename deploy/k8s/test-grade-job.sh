#!/usr/bin/env bash
# test-grade-job.sh runs the grading Job's own command, read from
# deploy/k8s/grade-job.yaml, once per index as the Job's pods would, against
# real submissions of one exercise (the reference solution twice, the stub
# once), without a cluster: the working folder is this checkout (the grading
# image's /home/jovyan/course, which holds the hidden tests), the
# submissions and results folders temporary ones (the Job's SUBMISSIONS and
# RESULTS). It checks that every student is graded in exactly one shard,
# with the scores the solution and the stub must get, and that each
# student's feedback file is written.
#
#   bash deploy/k8s/test-grade-job.sh [EXERCISE]     (default 01-strided-copy)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
course=$(cd "$here/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
exercise=${1:-01-strided-copy}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "test-grade-job: FAIL  $*" >&2
	exit 1
}
# The container's command and its literal environment, from the YAML.
/usr/bin/python3 - "$here/grade-job.yaml" "$tmp" <<'PY'
import shlex, sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
spec = job["spec"]
c = spec["template"]["spec"]["containers"][0]
cmd = c["command"]
assert cmd[:2] == ["bash", "-c"], cmd
open(sys.argv[2] + "/command.sh", "w").write(cmd[2])
with open(sys.argv[2] + "/env.sh", "w") as f:
    for e in c.get("env", []):
        if "value" in e:
            f.write("export %s=%s\n" % (e["name"], shlex.quote(e["value"])))
    f.write("completions=%d\n" % spec["completions"])
PY
# shellcheck disable=SC1091
. "$tmp/env.sh"
mkdir -p "$tmp/submissions" "$tmp/results"
files=$(/usr/bin/python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["student_files"]))' "$course/grader/hidden/$exercise/grade.json")
for student in ada carl; do
	mkdir "$tmp/submissions/$student"
	for f in $files; do cp "$course/solutions/$exercise/$f" "$tmp/submissions/$student/"; done
done
mkdir "$tmp/submissions/bob"
for f in $files; do cp "$course/exercises/$exercise/$f" "$tmp/submissions/bob/"; done

start=$(date +%s)
for index in $(seq 0 $((completions - 1))); do
	(cd "$course" && EXERCISE=$exercise JOB_COMPLETION_INDEX=$index SUBMISSIONS=$tmp/submissions RESULTS=$tmp/results \
		bash -c "$(cat "$tmp/command.sh")") >"$tmp/pod-$index.log" 2>&1 ||
		{
			cat "$tmp/pod-$index.log"
			fail "pod $index of $completions failed (its log is above)"
		}
done
rows=$(for f in "$tmp/results/$exercise"-shard-*.csv; do tail -n +2 "$f"; done | sort)
names=$(cut -d, -f1 <<<"$rows" | tr '\n' ' ')
[ "$names" = "ada bob carl " ] || fail "the shards graded '$names', want each of ada bob carl once"
max=$(awk -F, '$1 == "ada" { print $3 }' <<<"$rows")
for s in ada carl; do
	[ "$(awk -F, -v s=$s '$1 == s { print $2 "/" $4 }' <<<"$rows")" = "$max/100.0" ] || fail "$s (the solution) did not get full marks: $(grep "^$s," <<<"$rows")"
done
[ "$(awk -F, '$1 == "bob" { print $2 }' <<<"$rows")" = 0 ] || fail "bob (the stub) scored: $(grep '^bob,' <<<"$rows")"
for s in ada bob carl; do
	[ -s "$tmp/results/feedback-$exercise/$s.json" ] || fail "no feedback for $s"
done
echo "test-grade-job: ok    the Job's command, taken from grade-job.yaml, graded ada, bob and carl once each over $completions shards ($max/$max, 0, $max/$max) with their feedback, in $(($(date +%s) - start)) s"
