#!/usr/bin/env bash
# grade-class.sh grades one exercise for the whole class of the one-machine
# hub, as root, from the instructor's checkout (it holds the hidden tests):
#
#   bash deploy/hub/grade-class.sh EXERCISE [--regrade]
#
#   1. collects each student's files (the members of GPUMEM_STUDENT_GROUP,
#      default students) from ~/course/exercises/EXERCISE: the files the
#      exercise grades (its grade.json), read by the student's own uid, so a
#      link a student planted reaches only what they could read anyway, at
#      most 1 MiB each; into GPUMEM_GRADING/EXERCISE/submissions/NAME
#      (default /var/lib/gpumem/grading, root's, mode 700);
#   2. grades them with `grader batch` (umask 077): grades.csv (each test's
#      maximum in its column's name, a percent column) and feedback/NAME.json
#      beside the submissions; a second run grades only new students, and
#      --regrade grades everyone again;
#   3. hands each student their feedback, ~/course/feedback/EXERCISE.json,
#      written by the student's uid: scores, and the messages of the tests
#      (hidden tests' names are those of grade.json; their files, lines
#      and source never appear; grader/README.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
course=$(cd "$here/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
group=${GPUMEM_STUDENT_GROUP:-students}
die() {
	printf 'grade-class: %s\n' "$*" >&2
	exit 1
}
[ $# -ge 1 ] && [[ "$1" =~ ^[0-9][0-9]-[a-z0-9-]+$ ]] || die "usage: grade-class.sh EXERCISE [--regrade] (like 01-strided-copy)"
exercise=$1
shift
[ "$(id -u)" -eq 0 ] || die "run as root: it reads every student's files (as that student) and grades them."
spec=$course/grader/hidden/$exercise/grade.json
[ -f "$spec" ] || die "no hidden tests for $exercise in $course (grader/hidden/$exercise/grade.json)"
files=$(/usr/bin/python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["student_files"]))' "$spec")
students=$(getent group "$group" | cut -d: -f4 | tr ',' ' ')
[ -n "$students" ] || die "the group $group has no members"

umask 077
root=${GPUMEM_GRADING:-/var/lib/gpumem/grading}
install -d -m 700 "$root"
dir=$root/$exercise
install -d -m 700 "$dir" "$dir/submissions" "$dir/feedback"
as() { # as USER COMMAND...: the student's uid, gid and groups
	local u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups -- "$@"
}

collected=0
for s in $students; do
	home=$(getent passwd "$s" | cut -d: -f6)
	sub=$dir/submissions/$s
	rm -rf "$sub"
	mkdir "$sub"
	for f in $files; do
		# The student's cat, in the student's home; root only writes the
		# bytes into its own folder.
		as "$s" cat -- "$home/course/exercises/$exercise/$f" 2>/dev/null | head -c 1048576 >"$sub/$f" || true
		[ -s "$sub/$f" ] || rm -f "$sub/$f"
	done
	collected=$((collected + 1))
done
echo "grade-class: collected $exercise from $collected students into $dir/submissions"

(cd "$course" && go run ./grader/cmd/grader batch --exercise "$exercise" --submissions "$dir/submissions" \
	--out "$dir/grades.csv" --feedback "$dir/feedback" "$@")

handed=0
for s in $students; do
	[ -f "$dir/feedback/$s.json" ] || continue
	home=$(getent passwd "$s" | cut -d: -f6)
	# Written by the student's uid: a link in their home leads only where
	# they could write anyway.
	if as "$s" sh -c 'mkdir -p "$1/course/feedback" && cat >"$1/course/feedback/$2.json"' sh "$home" "$exercise" <"$dir/feedback/$s.json"; then
		handed=$((handed + 1))
	else
		echo "grade-class: could not hand $s their feedback (their ~/course?)" >&2
	fi
done
echo "grade-class: grades in $dir/grades.csv; feedback handed to $handed students (~/course/feedback/$exercise.json)"
