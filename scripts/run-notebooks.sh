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

# GoNB starts gopls (completion and help for someone typing in a cell)
# when the kernel's PATH finds it, and tells it of each cell it runs,
# whereupon gopls loads the cell's packages again (go list). Nobody types
# here: the notebooks execute through a copy of the gonb kernel whose PATH
# finds no gopls, each folder of its PATH that holds gopls replaced by a
# folder of links to its other programs. All ten lessons took 230 and 231 s
# of CPU this way, 245 and 307 s with gopls, which with the go commands it
# ran was 25 s of the 307 (process accounting, 2 cores, 2026-12-01).
# NOTEBOOK_GOPLS=1 executes them through the kernel as registered, gopls
# and all.
if [ -z "${NOTEBOOK_GOPLS:-}" ]; then
	if jupyter kernelspec list --json >"$out/kernelspecs.json" 2>/dev/null &&
		/usr/bin/python3 - "$out/kernelspecs.json" "$out/batch" <<'PY'
import json
import os
import sys

specs, batch = sys.argv[1], sys.argv[2]
with open(specs) as f:
    spec = json.load(f)["kernelspecs"]["gonb"]["spec"]
env = spec.setdefault("env", {})
folders = []
for i, folder in enumerate(env.get("PATH", os.environ["PATH"]).split(os.pathsep)):
    if not os.access(os.path.join(folder, "gopls"), os.X_OK):
        folders.append(folder)
        continue
    links = os.path.join(batch, "path-%d" % i)
    os.makedirs(links)
    for name in os.listdir(folder):
        if name != "gopls":
            os.symlink(os.path.join(os.path.abspath(folder), name), os.path.join(links, name))
    folders.append(links)
env["PATH"] = os.pathsep.join(folders)
os.makedirs(os.path.join(batch, "kernels", "gonb"))
with open(os.path.join(batch, "kernels", "gonb", "kernel.json"), "w") as f:
    json.dump(spec, f, indent=1)
PY
	then
		# JUPYTER_PATH's folders come before the user's and the system's.
		export JUPYTER_PATH="$out/batch${JUPYTER_PATH:+:$JUPYTER_PATH}"
	else
		echo "notebooks: no gonb kernel found to copy (jupyter kernelspec list): executing through the registered one, gopls and all" >&2
	fi
fi

# NOTEBOOKS_EXECUTED=DIR: a notebook whose executed copy is in DIR, made
# from the same cells (scripts/notebook-same.py), is not executed again:
# CI executes the notebooks once, offline in the classroom image (make
# image-test keeps them in site/executed-image), and checks that copy here
# as it checks its own. Any other notebook is executed.
reuse=${NOTEBOOKS_EXECUTED:-}

# run_one NOTEBOOK: executes it and writes its verdict line, and on
# failure the failing cell, to $out/NAME.report; exit status 1 on failure.
run_one() {
	local nb=$1 name status start secs how=
	name=$(basename "$nb" .ipynb)
	start=$(date +%s.%N)
	if [ -n "$reuse" ] && /usr/bin/python3 scripts/notebook-same.py "$nb" "$reuse/$name.ipynb" 2>"$out/$name.log" &&
		cp "$reuse/$name.ipynb" "$out/$name.ipynb"; then
		how=" (executed in the classroom image; not again)"
	fi
	# --allow-errors keeps the outputs of a failing cell, which
	# notebook-errors.py then prints; nbconvert's own message omits GoNB's
	# compiler errors.
	if { [ -n "$how" ] || jupyter nbconvert --to notebook --execute --allow-errors --ExecutePreprocessor.kernel_name=gonb \
		--ExecutePreprocessor.timeout="$timeout" --output-dir "$out" --output "$name" "$nb" >>"$out/$name.log" 2>&1; } &&
		/usr/bin/python3 scripts/notebook-errors.py "$out/$name.ipynb" >"$out/$name.errors" &&
		/usr/bin/python3 scripts/notebook-outputs.py --check "$out/$name.ipynb" >"$out/$name.errors"; then
		status=ok
	else
		status=FAILED
	fi
	secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	{
		printf 'notebook %-28s %-6s %6ss%s\n' "$name" "$status" "$secs" "$how"
		[ -n "$reuse" ] && [ -z "$how" ] && sed -n '1s/^/    executed here: /p' "$out/$name.log"
		if [ "$status" = FAILED ]; then
			if [ -s "$out/$name.errors" ]; then
				head -n 80 "$out/$name.errors" | sed 's/^/    /'
			else
				tail -n 30 "$out/$name.log" | sed 's/^/    /'
			fi
		fi
	} >"$out/$name.report"
	[ -n "$keep" ] && mkdir -p "$keep" && cp "$out/$name.ipynb" "$keep/" 2>/dev/null
	[ "$status" = ok ]
}

# NOTEBOOK_JOBS notebooks at a time (default: the number of CPUs). A
# notebook spends much of its time waiting on GoNB's compile of each cell
# and on the kernel's round trips, about one core in all, so two at a time
# on two cores take about half as long; each has its own kernel, and the
# figures they print come from the simulated clock, not the wall clock.
#
# The longest start first, so that the last to finish is a short one: in
# the classroom image (make image-test, 2 cores, 2026-11-30) lessons 09 and
# 02 took 31 and 29 s, 03 and 06 24 and 21 s, the others 8 to 17 s; in
# lesson order 09 started last and ran alone at the end. All ten took
# 105-119 s in lesson order (five runs), 88-99 s longest first (four
# runs, with faster tensor allocations too: not the order's alone). A
# notebook not in the list starts after the listed ones, in the order
# given; the reports are printed in the order given, whatever the order
# they started in.
longest_first=(09-across-cards 02-allocator 03-gradients-memory 06-profiling 05-moving-data 08-smaller-split 01-storage-views 04-clearing-reuse 07-training-budget 00-welcome)
order=()
for name in "${longest_first[@]}"; do
	for nb in "${books[@]}"; do
		[ "$(basename "$nb" .ipynb)" = "$name" ] && order+=("$nb")
	done
done
for nb in "${books[@]}"; do
	case " ${longest_first[*]} " in
	*" $(basename "$nb" .ipynb) "*) ;;
	*) order+=("$nb") ;;
	esac
done
jobs=${NOTEBOOK_JOBS:-$(nproc)}
running=0
for nb in "${order[@]}"; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n || true
		running=$((running - 1))
	fi
	run_one "$nb" &
	running=$((running + 1))
done
wait
passed=0
failed=0
for nb in "${books[@]}"; do
	name=$(basename "$nb" .ipynb)
	cat "$out/$name.report" 2>/dev/null || echo "notebook $name: no report"
	if head -n 1 "$out/$name.report" 2>/dev/null | grep -q ' ok '; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
done
echo "notebooks: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
