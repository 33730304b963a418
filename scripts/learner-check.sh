#!/usr/bin/env bash
# learner-check.sh times what a new student waits for, on a clean clone with
# empty Go caches, as `make lab` meets it: setup (GoNB, goimports and gopls
# built, the modules fetched, gpukit and the grader compiled), then the
# first answer of lesson 00 (the kernel's first cells), the first
# `grader check`, and a 20-cell sample of lesson 02 (scripts/cell-times.py).
# It prints each step as it goes and a summary at the end. Nothing of the
# machine's is touched: the clone, GOCACHE, GOMODCACHE and the Jupyter data
# folder (where setup registers the kernel) are temporary, removed at the
# end.
#
#   bash scripts/learner-check.sh [REV]      (default HEAD; make learner-check)
#
# REV may be an older commit, to measure before and after a change: the
# clone is of REV, and this checkout's cell-times.py times its notebooks
# when REV has none. Needs the Go module proxy (the caches start empty),
# Jupyter and python3-nbclient; takes 5 to 15 minutes on two cores. Not in
# CI: it measures the network and a cold machine, which CI is not.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-HEAD}
export PATH="/usr/local/go/bin:$PATH"

work=$(mktemp -d "${TMPDIR:-/tmp}/learner-check-XXXXXX")
# The module cache is read-only (Go's choice); make it removable first.
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
# XDG_CACHE_HOME: the grader keeps its own build cache there (as root).
export GOCACHE=$work/gocache GOMODCACHE=$work/gomodcache JUPYTER_DATA_DIR=$work/jupyter XDG_CACHE_HOME=$work/cache
export GOFLAGS= GOTOOLCHAIN=local

start=$SECONDS
say() { printf 'learner-check: [%4d s] %s\n' "$((SECONDS - start))" "$*"; }
fail() {
	say "FAIL  $*" >&2
	exit 1
}

say "cloning $rev into $work/course (GOCACHE, GOMODCACHE and the Jupyter data folder empty, under $work)"
git -C "$here" rev-parse --verify -q "$rev^{commit}" >/dev/null || fail "no commit $rev in $here"
git clone -q --no-checkout "$here" "$work/course"
git -C "$work/course" checkout -q "$(git -C "$here" rev-parse "$rev^{commit}")"
course=$work/course
[ -f "$course/scripts/cell-times.py" ] || cp "$here/scripts/cell-times.py" "$course/scripts/cell-times.py"

# setup, as make lab runs it (apt never: what it would install is the
# machine's, not the learner's wait).
t0=$SECONDS
(cd "$course" && bash scripts/setup.sh --no-apt) 2>&1 | sed -u 's/^/    /' || fail "setup failed (above)"
setup=$((SECONDS - t0))
say "setup: $setup s"

# The first answer: lesson 00's first cells through one gonb kernel.
t0=$SECONDS
out=$(cd "$course" && /usr/bin/python3 scripts/cell-times.py --cells 2 notebooks/00-welcome.ipynb 2>&1) ||
	{
		echo "$out"
		fail "lesson 00's first cells failed"
	}
echo "$out" | sed 's/^/    /'
first=$((SECONDS - t0))
cell0=$(awk '$1 == "cell" && $2 == 0 { print $3 }' <<<"$out")
cell1=$(awk '$1 == "cell" && $2 == 1 { print $3 }' <<<"$out")
say "lesson 00: kernel start and first two cells $first s (cell 0, the recipe: $cell0 s; cell 1: $cell1 s)"

# The first grader check, on an exercise's untouched stub.
t0=$SECONDS
(cd "$course" && go run ./grader/cmd/grader check 02-fragmentation) >"$work/check.log" 2>&1 || true
check=$((SECONDS - t0))
grep -q "02-fragmentation" "$work/check.log" || {
	cat "$work/check.log"
	fail "grader check printed no result"
}
say "first grader check (02-fragmentation, the stub): $check s"

# Twenty cells of lesson 02, as later cells cost.
out=$(cd "$course" && /usr/bin/python3 scripts/cell-times.py --cells 20 notebooks/02-allocator.ipynb 2>&1) ||
	{
		echo "$out"
		fail "lesson 02's cells failed"
	}
echo "$out" | sed 's/^/    /'
sample=$(grep '^cell-times: cells 1-' <<<"$out" | sed 's/^cell-times: //')

echo
echo "learner-check: $rev ($(git -C "$here" rev-parse --short "$rev^{commit}")), empty caches, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  setup (make lab before Jupyter starts)   $setup s"
echo "  to the first answer (setup + lesson 00)  $((setup + first)) s"
echo "  lesson 00: cell 0 (recipe), cell 1       $cell0 s, $cell1 s"
echo "  first grader check                       $check s"
echo "  lesson 02, 20 cells                      $sample"
