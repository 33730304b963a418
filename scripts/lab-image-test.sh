#!/usr/bin/env bash
# lab-image-test.sh checks `make lab-image` (scripts/lab-image.sh) on this
# working tree: it starts, and then
#
#   - JupyterLab from the image answers on /lab, and its notebooks/ folder is
#     this tree's (a file made here shows in JupyterLab's file list);
#   - a file saved in JupyterLab lands in this tree, owned by the tree's owner;
#   - the gonb kernel (the image's GoNB, in view under the mounted tree) runs
#     the welcome lesson's first cells against this tree's gpukit;
#   - SIGTERM (as Ctrl-C) stops the server and removes its container.
#
# Environment: IMAGE (default gpumem-course; make image builds it), PORT
# (default 18891). `make lab-image-test` runs it; it takes seconds once the
# image exists.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
port=${PORT:-18891}
failed=0
start=$(date +%s)

ok() { printf 'lab-image-test: ok    %s\n' "$*"; }
bad() {
	printf 'lab-image-test: FAIL  %s\n' "$*"
	failed=1
}
die() {
	printf 'lab-image-test: %s\n' "$*" >&2
	exit 1
}
if (: </dev/tcp/127.0.0.1/"$port") 2>/dev/null; then
	die "port $port on 127.0.0.1 is in use (PORT=... to choose another)."
fi
work=$(mktemp -d)
marker=notebooks/lab-image-test-$$.txt
saved=notebooks/lab-image-test-$$-saved.txt
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	[ -n "${lab_pid:-}" ] && kill "$lab_pid" 2>/dev/null && wait "$lab_pid" 2>/dev/null
	rm -rf "$work" "$marker" "$saved"
}
trap cleanup EXIT
echo "made on the host" >"$marker"

bash scripts/lab-image.sh 127.0.0.1 "$port" >"$work/log" 2>&1 &
lab_pid=$!
url=
for _ in $(seq 90); do
	url=$(sed -n 's/^lab-image: *\(http[^ ]*?token=[0-9a-f]*\)$/\1/p' "$work/log")
	[ -n "$url" ] && break
	kill -0 "$lab_pid" 2>/dev/null || break
	sleep 1
done
if [ -z "$url" ]; then
	bad "make lab-image did not print its address; its output:"
	sed 's/^/    /' "$work/log"
	exit 1
fi
name=gpumem-lab-$lab_pid
token=${url##*token=}
base=http://127.0.0.1:$port
ok "make lab-image serves in $(($(date +%s) - start)) s: $(grep -m1 'serves' "$work/log" | sed 's/^lab-image: //')"

api() { # api METHOD PATH [BODY]: prints the body; fails on an HTTP error
	/usr/bin/python3 - "$base" "$token" "$@" <<'PY'
import sys, urllib.request
base, token, method, path = sys.argv[1:5]
body = sys.argv[5].encode() if len(sys.argv) > 5 else None
req = urllib.request.Request(base + path, method=method, data=body,
                             headers={"Authorization": "token " + token, "Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=30) as r:
    print(r.read().decode(errors="replace"))
PY
}
app=$(api GET /lab 2>&1 | /usr/bin/python3 -c 'import sys; sys.path.insert(0, "deploy/hub"); from login import served_app; print(served_app(sys.stdin.read()) or "")')
if [[ $app == "JupyterLab "* ]]; then
	ok "$app answers on /lab"
else
	bad "/lab does not serve JupyterLab"
fi
names=$(api GET /api/contents/notebooks 2>&1 | /usr/bin/python3 -c 'import json, sys; print(" ".join(e["name"] for e in json.load(sys.stdin)["content"]))' 2>&1)
if grep -qw "$(basename "$marker")" <<<"$names" && grep -qw 00-welcome.ipynb <<<"$names"; then
	ok "JupyterLab's notebooks/ is this tree's (it lists $(basename "$marker"), made here)"
else
	bad "JupyterLab's notebooks/ does not show this tree's files: $names"
fi
api PUT "/api/contents/$saved" '{"type": "file", "format": "text", "content": "saved in JupyterLab\n"}' >/dev/null 2>&1
if [ "$(cat "$saved" 2>/dev/null)" = "saved in JupyterLab" ] && [ "$(stat -c %u "$saved")" = "$(stat -c %u .)" ]; then
	ok "a file saved in JupyterLab is in this tree, owned by its owner (uid $(stat -c %u .))"
else
	bad "a file saved in JupyterLab is not this tree's owner's file here: $(ls -ln "$saved" 2>&1)"
fi

t0=$(date +%s)
if out=$(timeout 300 /usr/bin/python3 deploy/hub/run_cell.py "$base/" "$token" notebooks/00-welcome.ipynb lessons/00-welcome.md#1 lessons/00-welcome.md#2 2>&1) &&
	grep -q 'device: *sim:0' <<<"$out"; then
	ok "the gonb kernel ran the welcome lesson's first cells in $(($(date +%s) - t0)) s ($(grep -m1 'device:' <<<"$out" | tr -s ' '))"
else
	bad "the welcome lesson's first cells failed in the gonb kernel:"
	tail -n 20 <<<"$out" | sed 's/^/    /'
fi

kill -TERM "$lab_pid"
wait "$lab_pid" 2>/dev/null
lab_pid=
if podman container exists "$name"; then
	bad "the container $name is still there after make lab-image was stopped"
	podman rm -f -t 2 "$name" >/dev/null 2>&1
else
	ok "stopping make lab-image removed its container"
fi
echo "lab-image-test: finished in $(($(date +%s) - start)) s"
exit "$failed"
