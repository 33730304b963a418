#!/usr/bin/env bash
# Executes every notebook (or the ones named) top to bottom through the GoNB
# kernel with jupyter nbconvert, prints the time of each, and on failure the
# failing cell and its error, and checks that the figures each lesson's
# prose quotes are printed by its cells (scripts/notebook-outputs.py
# --check). Executed copies go to a temporary folder: the notebooks in the
# repository stay without outputs. With SITE_DIR set, the executed copies
# are kept in $SITE_DIR/executed for scripts/build-site.sh (make site), so
# the notebooks run once for both the checks and the site.
#
#   scripts/run-notebooks.sh [notebooks/NN-name.ipynb ...]
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
timeout=${NOTEBOOK_CELL_TIMEOUT:-600}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

if [ $# -gt 0 ]; then
	books=("$@")
else
	books=(notebooks/*.ipynb)
fi
[ -e "${books[0]}" ] || {
	echo "notebooks: none found in notebooks/" >&2
	exit 1
}

keep=${NOTEBOOK_KEEP:-}
if [ -n "${SITE_DIR:-}" ]; then
	keep="$SITE_DIR/executed"
	rm -rf "$keep" && mkdir -p "$keep"
fi

# Module downloads happen once here, not inside the first notebook's timer.
go mod download >/dev/null 2>&1 || true
export PATH="$here/bin:$PATH"

passed=0
failed=0
for nb in "${books[@]}"; do
	name=$(basename "$nb" .ipynb)
	start=$(date +%s.%N)
	# --allow-errors keeps the outputs of a failing cell, which
	# notebook-errors.py then prints; nbconvert's own message omits GoNB's
	# compiler errors.
	if jupyter nbconvert --to notebook --execute --allow-errors --ExecutePreprocessor.kernel_name=gonb \
		--ExecutePreprocessor.timeout="$timeout" --output-dir "$out" --output "$name" "$nb" >"$out/$name.log" 2>&1 &&
		/usr/bin/python3 scripts/notebook-errors.py "$out/$name.ipynb" >"$out/$name.errors" &&
		/usr/bin/python3 scripts/notebook-outputs.py --check "$out/$name.ipynb" >"$out/$name.errors"; then
		status=ok
		passed=$((passed + 1))
	else
		status=FAILED
		failed=$((failed + 1))
	fi
	secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	printf 'notebook %-28s %-6s %6ss\n' "$name" "$status" "$secs"
	if [ "$status" = FAILED ]; then
		if [ -s "$out/$name.errors" ]; then
			head -n 80 "$out/$name.errors" | sed 's/^/    /'
		else
			tail -n 30 "$out/$name.log" | sed 's/^/    /'
		fi
	fi
	[ -n "$keep" ] && mkdir -p "$keep" && cp "$out/$name.ipynb" "$keep/" 2>/dev/null
done
echo "notebooks: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
