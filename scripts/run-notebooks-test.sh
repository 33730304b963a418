#!/usr/bin/env bash
# Tests two things a notebook run through GoNB must not do, with a probe
# notebook: the lessons' first cell (from lessons/00-welcome.md), GoNB's
# %track (which lists what GoNB watches for gopls) and a cell that prints.
#
#   - scripts/run-notebooks.sh executes notebooks through a gonb kernel that
#     starts no gopls: the probe runs through a kernel registered with a
#     stand-in gopls on its PATH, which leaves a mark when started. Through
#     run-notebooks.sh the printed line is there and the mark is not; with
#     NOTEBOOK_GOPLS=1 (the kernel as registered) the mark is, so the
#     stand-in would show a gopls started.
#   - the first cell leaves GoNB watching nothing: given the repository as
#     an absolute folder, GoNB would watch its every Go file and open them
#     all in gopls at the first Tab (scripts/nbgen, FirstCell). The probe's
#     folder above stands in for the repository (go.mod, go.sum and gpukit
#     linked into it).
#
# Needs make setup's gonb kernel (bin/gonb, bin/goimports), Jupyter and the
# module cache; 10-15 s.
#
#   bash scripts/run-notebooks-test.sh
set -uo pipefail
cd "$(dirname "$0")/.."
here=$PWD
failures=0
fail() {
	echo "FAIL $*"
	failures=$((failures + 1))
}
if ! command -v jupyter >/dev/null || [ ! -x bin/gonb ] || [ ! -x bin/goimports ]; then
	echo "SKIP run-notebooks-test: needs Jupyter and make setup's bin/gonb and bin/goimports"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/data/kernels/gonb" "$tmp/nb"
for f in go.mod go.sum gpukit; do ln -s "$here/$f" "$tmp/$f"; done
ln -s "$here/bin/gonb" "$tmp/bin/gonb"
ln -s "$here/bin/goimports" "$tmp/bin/goimports"
printf '#!/bin/sh\ntouch %q\nexit 1\n' "$tmp/gopls-started" >"$tmp/bin/gopls"
chmod +x "$tmp/bin/gopls"
go=$(dirname "$(command -v go)")
/usr/bin/python3 - "$tmp" "$go" lessons/00-welcome.md <<'PY'
import json, re, sys
tmp, go, lesson = sys.argv[1], sys.argv[2], sys.argv[3]
first = re.search(r"^```go\n(.*?)^```", open(lesson).read(), re.S | re.M).group(1)
kernel = {
    "argv": [tmp + "/bin/gonb", "--kernel", "{connection_file}", "-logtostderr=true"],
    "display_name": "Go (gonb)", "language": "go", "interrupt_mode": "message",
    "env": {"PATH": ":".join([tmp + "/bin", go, "/usr/bin", "/bin"])},
}
json.dump(kernel, open(tmp + "/data/kernels/gonb/kernel.json", "w"))
def cell(name, source):
    return {"cell_type": "code", "execution_count": None, "id": name, "metadata": {}, "outputs": [],
            "source": source.splitlines(True)}
cells = [cell("first", first), cell("track", "%track\n"),
         cell("probe", '%%\nfmt.Println("the batch kernel ran this cell")\n')]
book = {"cells": cells, "metadata": {"kernelspec": {"name": "gonb", "display_name": "Go (gonb)", "language": "go"}},
        "nbformat": 4, "nbformat_minor": 5}
json.dump(book, open(tmp + "/nb/99-probe.ipynb", "w"))
PY
run() { # run [ENV...]: run-notebooks.sh on the probe, its executed copy kept in $tmp/kept
	rm -rf "$tmp/kept" "$tmp/gopls-started"
	env JUPYTER_DATA_DIR="$tmp/data" JUPYTER_PATH= NOTEBOOK_KEEP="$tmp/kept" NOTEBOOK_JOBS=1 "$@" \
		bash scripts/run-notebooks.sh "$tmp/nb/99-probe.ipynb" 2>&1
}
out=$(run)
status=$?
[ "$status" = 0 ] || fail "run-notebooks.sh: exit status $status, want 0: $out"
grep -q "the batch kernel ran this cell" "$tmp/kept/99-probe.ipynb" 2>/dev/null ||
	fail "run-notebooks.sh: the cell's output is not in the executed copy"
[ -e "$tmp/gopls-started" ] && fail "run-notebooks.sh: the kernel started gopls"
grep -q "No files or directory being tracked" "$tmp/kept/99-probe.ipynb" 2>/dev/null ||
	fail "the lessons' first cell left GoNB watching $(grep -c '<li>' "$tmp/kept/99-probe.ipynb") folders for gopls ($(grep -o '<li>[^<]*' "$tmp/kept/99-probe.ipynb" | head -n 2 | cut -c5- | paste -sd ' '), ...)"
out=$(run NOTEBOOK_GOPLS=1)
status=$?
[ "$status" = 0 ] || fail "run-notebooks.sh with NOTEBOOK_GOPLS=1: exit status $status, want 0: $out"
[ -e "$tmp/gopls-started" ] ||
	fail "run-notebooks.sh with NOTEBOOK_GOPLS=1: the registered kernel did not start the stand-in gopls (the check above proves nothing)"
[ "$failures" = 0 ] && echo "run-notebooks: ok" && exit 0
exit 1
