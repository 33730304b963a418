#!/usr/bin/env bash
# image-context-test.sh checks, without building the image, what the
# classroom image (every student's container) is built from:
#   - the context (scripts/image-context.sh) holds no solutions/ and no
#     grader/hidden/, no file with the content of one of theirs (a solution
#     or hidden test copied elsewhere), and only files the checkout tracks
#     (no gradebook, feedback or class folder left beside the course);
#   - the Dockerfile's guard stops a build from a context holding
#     solutions/ or grader/hidden/ (the checkout itself), and lets the
#     student edition through.
# `make image-test` checks the built image itself (no solutions/ or
# grader/hidden/ inside).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "image-context-test: FAIL  $*" >&2
	exit 1
}
bash scripts/image-context.sh "$tmp/edition" 2>/dev/null
[ ! -e "$tmp/edition/solutions" ] && [ ! -e "$tmp/edition/grader/hidden" ] || fail "the context holds solutions/ or grader/hidden/"
# Contents only the instructor has: those of solutions/ and grader/hidden/
# that no other tracked file (a stub, a README) shares.
git ls-files -z solutions grader/hidden | xargs -0 sha256sum | cut -d' ' -f1 | sort -u >"$tmp/instructor"
git ls-files -z | grep -z -v -E '^(solutions|grader/hidden)/' | xargs -0 sha256sum | cut -d' ' -f1 | sort -u >"$tmp/public"
comm -23 "$tmp/instructor" "$tmp/public" >"$tmp/secret"
(cd "$tmp/edition" && find . -type f -print0 | xargs -0 sha256sum) | sort >"$tmp/context"
leaks=$(join <(sort "$tmp/secret") <(cut -d' ' -f1,3 "$tmp/context" | sort) | cut -d' ' -f2)
[ -z "$leaks" ] || fail "the context holds the content of a solution or hidden test: $leaks"
untracked=$(comm -13 <(git ls-files | sort) <(cd "$tmp/edition" && find . -type f | sed 's|^\./||' | sort))
[ -z "$untracked" ] || fail "the context holds files the checkout does not track: $untracked"
echo "image-context-test: ok    the context holds $(wc -l <"$tmp/context") tracked files, none of solutions/ or grader/hidden/ ($(wc -l <"$tmp/secret") files' contents checked)"

guard=$(sed -n '/^RUN if \[ -e solutions \]/,/fi$/p' Dockerfile | sed -e 's/^RUN //' -e 's/\\$//')
[ -n "$guard" ] || fail "the Dockerfile has no guard against solutions/ in the context"
(cd "$tmp/edition" && sh -c "$guard") 2>/dev/null || fail "the Dockerfile's guard refuses the student edition"
for part in solutions grader/hidden; do
	mkdir -p "$tmp/full/$part"
	(cd "$tmp/full" && sh -c "$guard") 2>/dev/null && fail "the Dockerfile's guard lets a context with $part/ through"
	rm -rf "$tmp/full"
done
echo "image-context-test: ok    the Dockerfile's guard stops a build from a context with solutions/ or grader/hidden/"
