#!/usr/bin/env bash
# image-context.sh writes the classroom image's build context into DIR (new
# or empty): the student edition of this checkout (grader release: tracked
# files only, no solutions/, no grader/hidden/), each file with its
# checkout's modification time, so that an unchanged course reuses the
# image's cached layers. scripts/image-build.sh builds from it;
# scripts/image-context-test.sh checks it without building.
#
#   scripts/image-context.sh DIR
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
[ $# -eq 1 ] || {
	echo "usage: image-context.sh DIR" >&2
	exit 2
}
out=$1
go run ./grader/cmd/grader release --out "$out" >&2
(cd "$out" && find . -type f -print0) | while IFS= read -r -d '' f; do
	touch -r "$f" "$out/$f"
done
