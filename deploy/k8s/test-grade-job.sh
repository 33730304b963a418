#!/usr/bin/env bash
# test-grade-job.sh runs the grading Job's own command, read from
# deploy/k8s/grade-job.yaml, once per index as the Job's pods would, against
# real submissions of one exercise (the reference solution twice, the stub
# once, and eve's, which tries to write into the results), without a
# cluster: each "pod" is the grading image (make image-grader) run by
# podman with the pod's user and capabilities from the YAML, the
# submissions read-only at /submissions and a results folder at /results.
# It checks that every student is graded in exactly one shard, with the
# scores the solution and the stub must get, that each student's feedback
# file is written, that eve's file earns nothing and writes nothing, and
# that a test's uid (the grader's pool) can write neither /results nor the
# hidden tests.
#
#   bash deploy/k8s/test-grade-job.sh [EXERCISE]     (default 01-strided-copy)
#   IMAGE=gpumem-grader (the default) names the grading image.
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
command -v podman >/dev/null || fail "needs podman (apt-get install -y podman runc)"
image=${IMAGE:-gpumem-grader}
if ! podman image exists "$image"; then
	echo "test-grade-job: building $image first (make image-grader: the classroom image, then the hidden tests; minutes the first time)"
	make -C "$course" image-grader >"$tmp/image.log" 2>&1 || {
		tail -20 "$tmp/image.log"
		fail "make image-grader failed (its log's end is above)"
	}
fi
# The container's command, its literal environment, the pod's user and the
# container's capabilities, from the YAML.
/usr/bin/python3 - "$here/grade-job.yaml" "$tmp" <<'PY'
import shlex, sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
spec = job["spec"]
pod = spec["template"]["spec"]
c = pod["containers"][0]
cmd = c["command"]
assert cmd[:2] == ["bash", "-c"], cmd
open(sys.argv[2] + "/command.sh", "w").write(cmd[2])
sc = c.get("securityContext", {})
assert sc.get("allowPrivilegeEscalation") is False and not sc.get("privileged"), sc
caps = sc.get("capabilities", {})
assert caps.get("drop") == ["ALL"], caps
with open(sys.argv[2] + "/env.sh", "w") as f:
    for e in c.get("env", []):
        if "value" in e:
            f.write("export %s=%s\n" % (e["name"], shlex.quote(e["value"])))
    f.write("completions=%d\n" % spec["completions"])
    f.write("workdir=%s\n" % shlex.quote(c["workingDir"]))
    f.write("user=%d\n" % pod["securityContext"]["runAsUser"])
    f.write("caps=%s\n" % shlex.quote(",".join(caps.get("add", []))))
    f.write("memory=%s\n" % shlex.quote(c["resources"]["limits"]["memory"].replace("Gi", "g")))
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
# eve: the solution, plus an init that writes a forged gradebook row into
# /results and rewrites a hidden test: the import allowlist refuses os, so
# she is graded as the stub; were it bypassed, her tests' uid could write
# neither (checked below).
mkdir "$tmp/submissions/eve"
for f in $files; do cp "$course/solutions/$exercise/$f" "$tmp/submissions/eve/"; done
first=${files%% *}
sed -i '0,/^import (/s//import (\n\t"os"/' "$tmp/submissions/eve/$first"
grep -q '"os"' "$tmp/submissions/eve/$first" || sed -i '0,/^package .*/s//&\n\nimport "os"/' "$tmp/submissions/eve/$first"
cat >>"$tmp/submissions/eve/$first" <<'GO'

func init() {
	os.WriteFile("/results/forged.csv", []byte("eve,100,100,100.0\n"), 0o644)
	os.WriteFile("hidden_test.go", nil, 0o644)
}
GO
chmod -R go-rwx "$tmp/submissions" # as a submissions volume may be: readable by its owner only
chmod 1777 "$tmp/results"            # as a results volume may be: anyone's

# --runtime runc and the limits: as scripts/image-test.sh says, crun and
# podman's default limits are refused on some machines.
run=(podman run --rm --runtime runc --network none --ulimit nofile=16384:16384 --ulimit nproc=16384:16384)
start=$(date +%s)
for index in $(seq 0 $((completions - 1))); do
	"${run[@]}" --memory "$memory" \
		--user "$user" --cap-drop all --cap-add "$caps" --security-opt no-new-privileges \
		-v "$tmp/submissions:/submissions:ro" -v "$tmp/results:/results" -w "$workdir" \
		-e EXERCISE="$exercise" -e JOB_COMPLETION_INDEX="$index" -e COMPLETIONS="$COMPLETIONS" \
		-e SUBMISSIONS=/submissions -e RESULTS=/results \
		"$image" bash -c "$(cat "$tmp/command.sh")" >"$tmp/pod-$index.log" 2>&1 ||
		{
			cat "$tmp/pod-$index.log"
			fail "pod $index of $completions failed (its log is above)"
		}
done
rows=$(for f in "$tmp/results/$exercise"-shard-*.csv; do tail -n +2 "$f"; done | sort)
names=$(cut -d, -f1 <<<"$rows" | tr '\n' ' ')
[ "$names" = "ada bob carl eve " ] || fail "the shards graded '$names', want each of ada bob carl eve once"
max=$(awk -F, '$1 == "ada" { print $3 }' <<<"$rows")
for s in ada carl; do
	[ "$(awk -F, -v s=$s '$1 == s { print $2 "/" $4 }' <<<"$rows")" = "$max/100.0" ] || fail "$s (the solution) did not get full marks: $(grep "^$s," <<<"$rows")"
done
[ "$(awk -F, '$1 == "bob" { print $2 }' <<<"$rows")" = 0 ] || fail "bob (the stub) scored: $(grep '^bob,' <<<"$rows")"
for s in ada bob carl eve; do
	[ -s "$tmp/results/feedback-$exercise/$s.json" ] || fail "no feedback for $s"
done
[ "$(awk -F, '$1 == "eve" { print $2 }' <<<"$rows")" = 0 ] || fail "eve (who imports os) scored: $(grep '^eve,' <<<"$rows")"
grep -qF 'imports \"os\"' "$tmp/results/feedback-$exercise/eve.json" || fail "eve's feedback does not name the import it refused: $(cat "$tmp/results/feedback-$exercise/eve.json")"
[ ! -e "$tmp/results/forged.csv" ] || fail "eve's code wrote /results/forged.csv"
# Were the allowlist bypassed: a test's uid (the first of the grader's
# pool) can write neither the results nor the hidden tests.
uid=1879113728
hidden=$(ls "$course/grader/hidden/$exercise/"*_test.go | head -1)
if "${run[@]}" --user "$uid:$uid" -v "$tmp/results:/results" -w "$workdir" "$image" \
	bash -c "touch /results/forged.csv || exit 0; exit 1" >"$tmp/uid.log" 2>&1 && [ ! -e "$tmp/results/forged.csv" ]; then :; else
	cat "$tmp/uid.log"
	fail "uid $uid could write /results"
fi
if ! "${run[@]}" --user "$uid:$uid" -w "$workdir" "$image" \
	bash -c "echo >> grader/hidden/$exercise/$(basename "$hidden") || exit 0; exit 1" >"$tmp/uid.log" 2>&1; then
	cat "$tmp/uid.log"
	fail "uid $uid could write the hidden tests"
fi
echo "test-grade-job: ok    the Job's command, taken from grade-job.yaml, ran in $image as uid $user with only $caps; it graded ada, bob, carl and eve once each over $completions shards ($max/$max, 0, $max/$max, 0: eve's os import refused, nothing of hers written) with their feedback, and a test's uid can write neither /results nor the hidden tests; in $(($(date +%s) - start)) s"
