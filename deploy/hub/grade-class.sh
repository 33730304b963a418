#!/usr/bin/env bash
# grade-class.sh grades one exercise for the whole class of the one-machine
# hub, as root, from the instructor's checkout (it holds the hidden tests):
#
#   bash deploy/hub/grade-class.sh EXERCISE [--regrade]
#
#   1. collects each student's files (the members of GPUMEM_STUDENT_GROUP,
#      default students) from ~/course/exercises/EXERCISE: the files the
#      exercise grades (its grade.json), at most 1 MiB each, into
#      GPUMEM_GRADING/EXERCISE/submissions/NAME (default
#      /var/lib/gpumem/grading, root's, mode 700), with `grader collect`:
#      root reads them itself, opening every folder and the file without
#      following a link, and only a regular file of the student's
#      (grader/collect). No process ever runs as a student here: once, a
#      `cat` as the student in this root session could be ptraced and made
#      to type into this terminal, and a FIFO made it wait forever. What
#      could not be read (a link, a FIFO, someone else's file) is that
#      student's row, printed, and graded as the stub;
#   2. grades them with `grader batch` (umask 077): grades.csv (each test's
#      maximum in its column's name, a percent column) and feedback/NAME.json
#      beside the submissions; a second run grades only new students, and
#      --regrade grades everyone again;
#   3. hands each student their feedback, ~/course/feedback/EXERCISE.json,
#      with `grader handback`, which writes it as collect reads (no link
#      followed; the file is the student's, mode 600), with what could not
#      be read at the top: scores, and the messages of the tests (hidden
#      tests' names are those of grade.json; their files, lines and source
#      never appear; grader/README.md).
#
# Every step runs in its own session (setsid: no controlling terminal),
# with stdin from /dev/null and a clean environment, so nothing it starts
# can read this terminal or push input into it.
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
[ "$(id -u)" -eq 0 ] || die "run as root: it reads every student's files (following no link they planted) and grades them."
spec=$course/grader/hidden/$exercise/grade.json
[ -f "$spec" ] || die "no hidden tests for $exercise in $course (grader/hidden/$exercise/grade.json)"
students=$(getent group "$group" | cut -d: -f4 | tr ',' ' ')
[ -n "$students" ] || die "the group $group has no members"

umask 077
root=${GPUMEM_GRADING:-/var/lib/gpumem/grading}
install -d -m 700 "$root"
dir=$root/$exercise
install -d -m 700 "$dir" "$dir/submissions" "$dir/feedback"
bin=$root/.grader-bin
install -d -m 700 "$bin"
# Built once per run from this checkout, as root; GOFLAGS etc. from the
# instructor's environment are not passed on.
detached() { # detached COMMAND...: its own session, no tty, a clean environment
	setsid --wait env -i PATH="/usr/local/go/bin:/usr/bin:/bin" HOME="${HOME:-/root}" \
		GOCACHE="$(go env GOCACHE)" GOMODCACHE="$(go env GOMODCACHE)" GOTOOLCHAIN=local "$@" </dev/null
}
(cd "$course" && detached go build -trimpath -o "$bin/grader" ./grader/cmd/grader)
grader=("$bin/grader")

# shellcheck disable=SC2086 # $students is a list of account names
(cd "$course" && detached "${grader[@]}" collect --exercise "$exercise" --out "$dir/submissions" $students)

(cd "$course" && detached "${grader[@]}" batch --exercise "$exercise" --submissions "$dir/submissions" \
	--out "$dir/grades.csv" --feedback "$dir/feedback" "$@")

# shellcheck disable=SC2086
(cd "$course" && detached "${grader[@]}" handback --exercise "$exercise" --feedback "$dir/feedback" \
	--submissions "$dir/submissions" $students)
echo "grade-class: grades in $dir/grades.csv"
