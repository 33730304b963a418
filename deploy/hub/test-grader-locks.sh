#!/usr/bin/env bash
# test-grader-locks.sh replays, as root, a student's two attacks on the
# grader's per-uid lock files (issue 19 item 4, issue 18 item 6) while the
# instructor runs `grader batch` on the same machine, the one-machine
# class's way of grading (docs/instructors.md section 5):
#   1. the student creates and locks every /tmp/grader-uid-N.lock first:
#      the batch must still finish (it hung, waiting for a free uid);
#   2. the student makes each /tmp/grader-uid-N.lock a link to a file of
#      their choice: root must create nothing there.
# The grader in this tree is the one tested (GRADER_CHECKOUT=DIR tests
# another checkout's); the locks belong in a
# root-owned folder that no student can touch. The test runs in a mount
# namespace of its own with an empty /tmp, as on a machine where no grader
# has run yet (graders run by other people here keep their locks).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
course=$(cd "${GRADER_CHECKOUT:-$here/../..}" && pwd)
export PATH="/usr/local/go/bin:$PATH"
student=gpumem-lk
exercise=01-strided-copy
failed=0
ok() { printf 'grader-locks-test: ok    %s\n' "$*"; }
bad() {
	printf 'grader-locks-test: FAIL  %s\n' "$*"
	failed=1
}
[ "$(id -u)" -eq 0 ] || {
	echo "grader-locks-test: run as root (the grader's uid pool is root's)" >&2
	exit 1
}
if [ -z "${GPUMEM_LOCKS_TEST_NS:-}" ]; then
	exec env GPUMEM_LOCKS_TEST_NS=1 unshare -m --propagation private bash "$0" "$@"
fi
mount -t tmpfs -o mode=1777 tmpfs /tmp || exit 1
tmp=$(mktemp -d)
target=$(mktemp -d /var/tmp/gpumem-lock-target.XXXXXX)
chmod 755 "$target"
cleanup() {
	[ -n "${holder:-}" ] && kill "$holder" 2>/dev/null
	pkill -KILL -u "$student" 2>/dev/null
	id "$student" >/dev/null 2>&1 && userdel -r "$student" >/dev/null 2>&1
	find /tmp -maxdepth 1 -name 'grader-uid-*.lock' -user "$student" -delete 2>/dev/null
	rm -rf "$tmp" "$target"
}
trap cleanup EXIT
id "$student" >/dev/null 2>&1 || useradd -m -K HOME_MODE=0700 -s /bin/bash "$student"
as_student() { setpriv --reuid="$student" --regid="$(id -g "$student")" --init-groups -- "$@"; }

(cd "$course" && go build -o "$tmp/grader" ./grader/cmd/grader) || exit 1
files=$(/usr/bin/python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["student_files"]))' "$course/grader/hidden/$exercise/grade.json")
for s in ada bob; do
	mkdir -p "$tmp/subs/$s"
	for f in $files; do cp "$course/solutions/$exercise/$f" "$tmp/subs/$s/"; done
done
# The uid pool: 64 uids from 0x70000000 (grader/sandbox/sandbox.go).
uids=$(seq 1879048192 1879048255)
batch() { # batch OUT: grades both students, at most 120 s
	(cd "$course" && env -u TMPDIR timeout -k 15 120 "$tmp/grader" batch --exercise "$exercise" --submissions "$tmp/subs" --out "$1" --jobs 2) >"$tmp/batch.log" 2>&1
}
# Locks or links left by an earlier run of this test, or by a student.
for u in $uids; do
	f=/tmp/grader-uid-$u.lock
	if [ -L "$f" ] || { [ -e "$f" ] && [ "$(stat -c %U "$f")" != root ]; }; then
		echo "grader-locks-test: $f is not root's ($(ls -ld "$f")); remove it first" >&2
		exit 1
	fi
done

# 1. Every lock file taken first.
cat >"$tmp/hold.py" <<'EOF'
import fcntl, os, sys, time
held = []
for uid in sys.argv[1:]:
    path = "/tmp/grader-uid-%s.lock" % uid
    try:
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.append(fd)
    except OSError:
        pass  # root's file from an earlier grader: the student cannot open it
print(len(held), flush=True)
time.sleep(600)
EOF
chmod 644 "$tmp/hold.py"
chmod 711 "$tmp"
# shellcheck disable=SC2086
as_student /usr/bin/python3 "$tmp/hold.py" $uids >"$tmp/held" 2>&1 &
holder=$!
for _ in $(seq 50); do [ -s "$tmp/held" ] && break; sleep 0.1; done
held=$(cat "$tmp/held")
t0=$(date +%s)
batch "$tmp/grades1.csv"
rc=$?
if [ "$rc" = 0 ] && [ "$(tail -n +2 "$tmp/grades1.csv" | wc -l)" = 2 ]; then
	ok "grader batch graded the class in $(($(date +%s) - t0)) s while a student held $held of the 64 lock files in /tmp"
else
	bad "grader batch did not finish within 120 s while a student held $held of the 64 lock files in /tmp (exit status $rc): $(tail -n 3 "$tmp/batch.log" | tr '\n' ' ')"
fi
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
holder=
find /tmp -maxdepth 1 -name 'grader-uid-*.lock' -user "$student" -delete

# 2. Every lock file a link to where the student chose.
for u in $uids; do
	[ -e "/tmp/grader-uid-$u.lock" ] || as_student ln -s "$target/planted-$u" "/tmp/grader-uid-$u.lock"
done
linked=$(find /tmp -maxdepth 1 -name 'grader-uid-*.lock' -user "$student" -type l | wc -l)
batch "$tmp/grades2.csv"
made=$(find "$target" -mindepth 1 | wc -l)
if [ "$made" = 0 ]; then
	ok "root created nothing through the $linked links a student planted at the lock files' names"
else
	bad "root created $made files where a student's links pointed ($(find "$target" -mindepth 1 | head -n 2 | tr '\n' ' '))"
fi
find /tmp -maxdepth 1 -name 'grader-uid-*.lock' -user "$student" -delete

exit "$failed"
