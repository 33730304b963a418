#!/usr/bin/env bash
# test-hub.sh checks the one-machine hub end to end, as root, on loopback:
#   1. starts JupyterHub with deploy/hub/jupyterhub_config.py (ports 18000,
#      18001, 18081; a temporary state folder; any password accepted);
#   2. creates three students (Unix users gpumem-s1..3) and, through the hub's
#      REST API, their hub accounts and servers;
#   3. in each server, through its kernel API, runs the course's first two
#      cells (the module recipe and gpukit's default device) in a gonb kernel;
#   4. makes student 3 allocate more than the memory limit (GPUMEM_MEM_LIMIT,
#      1G here): the kernel's OOM killer must end that student's program,
#      while the hub and the other students' servers keep working.
# Everything it made (users, homes, cgroups, the hub) is removed at the end.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
course=$(cd "$here/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
students="gpumem-s1 gpumem-s2 gpumem-s3"
hub=http://127.0.0.1:18000
state=$(mktemp -d /var/tmp/gpumem-hub-test.XXXXXX)
failed=0
start=$(date +%s)

ok() { printf 'hub-test: ok    %s\n' "$*"; }
bad() {
	printf 'hub-test: FAIL  %s\n' "$*"
	failed=1
}
[ "$(id -u)" -eq 0 ] || {
	echo "hub-test: run as root (the hub starts servers as the students)" >&2
	exit 1
}

cleanup() {
	[ -n "${hub_pid:-}" ] && kill "$hub_pid" 2>/dev/null && wait "$hub_pid" 2>/dev/null
	for s in $students; do
		pkill -KILL -u "$s" 2>/dev/null
		id "$s" >/dev/null 2>&1 && userdel -r "$s" >/dev/null 2>&1
		for g in /sys/fs/cgroup/*/gpumem-hub/student-"$s" /sys/fs/cgroup/gpumem-hub/student-"$s"; do
			[ -d "$g" ] && rmdir "$g" 2>/dev/null
		done
	done
	rmdir /sys/fs/cgroup/*/gpumem-hub /sys/fs/cgroup/gpumem-hub 2>/dev/null
	rm -rf "$state"
}
trap cleanup EXIT

bash "$here/install.sh" | sed 's/^/    /' || exit 1

head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$state/token"
token=$(cat "$state/token")
for s in $students; do
	id "$s" >/dev/null 2>&1 || useradd -m -s /bin/bash "$s"
done

GPUMEM_HUB_STATE=$state GPUMEM_ADMIN_TOKEN_FILE=$state/token GPUMEM_AUTHENTICATOR=dummy \
	GPUMEM_HUB_PORT=18000 GPUMEM_PROXY_API_PORT=18001 GPUMEM_HUB_API_PORT=18081 GPUMEM_MEM_LIMIT=1G \
	GPUMEM_COURSE_DIR=$course \
	jupyterhub -f "$here/jupyterhub_config.py" >"$state/hub.log" 2>&1 &
hub_pid=$!

api() { # api METHOD PATH: prints the body, fails on an HTTP error
	/usr/bin/python3 "$here/hub_api.py" "$1" "$hub/hub/api$2" "$token"
}
for _ in $(seq 60); do
	api GET / >/dev/null 2>&1 && break
	sleep 1
done
api GET / >/dev/null 2>&1 && ok "hub answers on $hub" || {
	bad "the hub did not start:"
	tail -n 30 "$state/hub.log"
	exit 1
}

for s in $students; do
	api POST "/users/$s" >/dev/null 2>&1 # may exist already; the server start below tells
	t0=$(date +%s)
	api POST "/users/$s/server" >/dev/null 2>&1
	ready=
	for _ in $(seq 120); do
		ready=$(api GET "/users/$s" 2>/dev/null | python3 -c 'import json,sys; s=json.load(sys.stdin)["servers"].get("",{}); print(s.get("ready", False))')
		[ "$ready" = True ] && break
		sleep 1
	done
	if [ "$ready" = True ]; then
		ok "$s: server started through the REST API in $(($(date +%s) - t0))s; course in ~$s/course: $(ls /home/$s/course/notebooks | wc -l) notebooks"
	else
		bad "$s: server not ready after 120s"
		tail -n 30 "$state/hub.log"
	fi
done

sed -n '/^```go/,/^```/p' "$course/lessons/00-welcome.md" | awk '/^```go/ { n++; next } /^```/ { next } { print > (dir "/cell" n ".go") }' dir="$state"
for s in $students; do
	t0=$(date +%s)
	if out=$(/usr/bin/python3 "$here/run_cell.py" "$hub/user/$s/" "$token" 00-welcome.ipynb "$state/cell1.go" "$state/cell2.go" 2>&1) &&
		grep -q 'device: *sim:0' <<<"$out"; then
		ok "$s: gonb kernel ran the course's first cells in $(($(date +%s) - t0))s ($(grep -m1 'device:' <<<"$out" | tr -s ' '))"
	else
		bad "$s: running a cell failed:"
		sed "s/^/    /" <<<"$out" | grep -v "^ *$" | tail -n 20
	fi
	rss=$(awk '/^total_rss / { printf "%d MiB", $2 / 1048576 }' /sys/fs/cgroup/memory/gpumem-hub/student-"$s"/memory.stat 2>/dev/null)
	peak=$(awk '{ printf "%d MiB", $1 / 1048576 }' /sys/fs/cgroup/memory/gpumem-hub/student-"$s"/memory.max_usage_in_bytes 2>/dev/null)
	[ -n "$peak" ] && echo "hub-test: $s uses $rss resident now, peak $peak (with page cache)"
done

# Student 3 goes over the 1G limit.
cat >"$state/hog.go" <<'EOF'
%%
b := make([]byte, 3<<29) // 1.5 GiB, touched so it is resident
for i := 0; i < len(b); i += 4096 {
	b[i] = 1
}
fmt.Println("allocated", len(b))
EOF
printf 'import "fmt"\n' >"$state/import.go"
out=$(/usr/bin/python3 "$here/run_cell.py" "$hub/user/gpumem-s3/" "$token" 00-welcome.ipynb "$state/import.go" "$state/hog.go" 2>&1)
oom=$(awk '/^oom_kill / { print $2 }' /sys/fs/cgroup/memory/gpumem-hub/student-gpumem-s3/memory.oom_control 2>/dev/null)
if ! grep -q '^allocated' <<<"$out" && [ "${oom:-0}" -ge 1 ]; then
	ok "gpumem-s3: a cell allocating 1.5 GiB over the 1G limit was killed by the OOM killer (oom_kill=$oom): $(grep -m1 -i -E 'kill|signal|error' <<<"$out" | head -c 120)"
else
	bad "gpumem-s3: the over-limit cell was not stopped by its limit (oom_kill=${oom:-?}):"
	sed 's/^/    /' <<<"$out" | tail -n 10
fi
api GET / >/dev/null 2>&1 && ok "the hub still answers after the OOM kill" || bad "the hub is down after the OOM kill"
if out=$(/usr/bin/python3 "$here/run_cell.py" "$hub/user/gpumem-s1/" "$token" 00-welcome.ipynb "$state/cell1.go" "$state/cell2.go" 2>&1) &&
	grep -q 'device: *sim:0' <<<"$out"; then
	ok "gpumem-s1's server still runs cells"
else
	bad "gpumem-s1's server failed after gpumem-s3's OOM kill: $out"
fi
s3=$(api GET /users/gpumem-s3 2>/dev/null | python3 -c 'import json,sys; s=json.load(sys.stdin)["servers"].get("",{}); print("running" if s.get("ready") else "stopped")')
echo "hub-test: gpumem-s3's server after the kill: $s3"

echo "hub-test: $([ "$failed" = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - start))s"
exit "$failed"
