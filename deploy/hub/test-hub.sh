#!/usr/bin/env bash
# test-hub.sh checks the one-machine hub end to end, as root, on loopback,
# and replays every attack a student was ever found to have on it
# (docs/instructors.md, "What a student cannot do"):
#   1. installs the software and a student edition of its own
#      (install.sh, GPUMEM_COURSE_DIR in the test's folder), makes three
#      students and their group from a roster (add-students.sh), an admin and
#      an outsider, and starts JupyterHub with jupyterhub_config.py (ports
#      18000, 18001, 18081, the cgroup gpumem-hub-test, a temporary state
#      folder, real PAM logins);
#   2. logins: a student gets in with the password the roster script made;
#      an account outside the group is refused even with its right
#      password; the admin named in GPUMEM_ADMINS gets in; five wrong
#      passwords lock a name, the right one included, and not another name;
#   3. item 1 of issue 19: while the course is copied into a student's
#      home, the student swaps ~/.course.copying for a link to a root-owned
#      folder, again and again; nothing in it may change owner or gain a
#      file (the spawner that copied as root chowned it all to the student);
#   4. homes are closed: the roster's homes are mode 700, a classmate cannot
#      list one, and a home opened to others is closed by the spawner;
#   5. the course in a home is the student edition (no solutions, no hidden
#      tests), and a student cannot read the instructor's checkout;
#   6. a student's browser, logged in on the hub, lands on JupyterLab at
#      /lab where this machine has it, else on the classic Notebook at /tree,
#      and the hub's log says so; in each server, through its kernel API, the
#      course's first two cells (the module recipe and gpukit's default
#      device) run in a gonb kernel;
#   7. a cell leaves a detached process, files in /tmp and /dev/shm and a
#      System V shared memory segment (in the server's IPC namespace):
#      the host sees neither file, and stopping the server kills the process
#      and removes the student's cgroup;
#   8. a student allocates more than the memory limit (GPUMEM_MEM_LIMIT, 1G
#      here): the kernel's OOM killer ends that student's program, while the
#      hub and the other students' servers keep working; then grade-class.sh
#      grades an exercise (the solution, the stub, and a student whose file
#      is a link to /etc/shadow): real scores, nothing collected through the
#      link, a private gradebook, feedback handed back as the student's file;
#   9. the idle culler stops a server nobody uses;
#  10. the hub's files stay in its state folder (no jupyterhub-proxy.pid in
#      the course or the working folder), and stopping the hub leaves no
#      proxy behind.
# It never touches a class hub on the same machine: its own ports (it stops
# if they are taken), cgroup, group, users and course folder. Everything it
# made is removed at the end.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
course=$(cd "$here/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
students="gpumem-s1 gpumem-s2 gpumem-s3"
admin=gpumem-t outsider=gpumem-x
group=gpumem-test-students
cgroup=gpumem-hub-test
hub=http://127.0.0.1:18000
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
for p in 18000 18001 18081; do
	if (: </dev/tcp/127.0.0.1/$p) 2>/dev/null; then
		echo "hub-test: port $p on 127.0.0.1 is in use (another hub test?); the test needs 18000, 18001 and 18081" >&2
		exit 1
	fi
done
# A run killed before its clean-up may have left its users and group.
for u in $students $admin $outsider; do
	id "$u" >/dev/null 2>&1 && { pkill -KILL -u "$u"; userdel -r "$u" >/dev/null 2>&1; }
done
getent group "$group" >/dev/null && groupdel "$group"
# The state folder: the hub's own files in hub/ (0700), the student
# edition in course/ (readable by the students, as /var/lib/gpumem/course;
# not under /tmp or /var/tmp, which each server has private).
install -d -m 755 /var/lib/gpumem
state=$(mktemp -d /var/lib/gpumem/hub-test.XXXXXX)
chmod 711 "$state"
mkdir -m 700 "$state/hub" "$state/work"
decoy=$(mktemp -d /var/tmp/gpumem-decoy.XXXXXX)

as() { # as USER COMMAND...: run a command as a student, as they could by ssh
	local u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups -- "$@"
}
cleanup() {
	[ -n "${watcher:-}" ] && kill "$watcher" 2>/dev/null
	[ -n "${hub_pid:-}" ] && kill "$hub_pid" 2>/dev/null && wait "$hub_pid" 2>/dev/null
	for s in $students $admin $outsider; do
		pkill -KILL -u "$s" 2>/dev/null
		id "$s" >/dev/null 2>&1 && userdel -r "$s" >/dev/null 2>&1
		for g in /sys/fs/cgroup/*/$cgroup/student-"$s" /sys/fs/cgroup/$cgroup/student-"$s"; do
			[ -d "$g" ] && rmdir "$g" 2>/dev/null
		done
	done
	rmdir /sys/fs/cgroup/*/$cgroup /sys/fs/cgroup/$cgroup 2>/dev/null
	getent group "$group" >/dev/null && groupdel "$group"
	rm -rf "$state" "$decoy"
}
trap cleanup EXIT

GPUMEM_COURSE_DIR=$state/course bash "$here/install.sh" | sed 's/^/    /' || exit 1

# --- 1. the class -------------------------------------------------------
printf '%s\n' "# the test's class" $students >"$state/work/roster.txt"
GPUMEM_STUDENT_GROUP=$group bash "$here/add-students.sh" "$state/work/roster.txt" | sed 's/^/    /'
password() { awk -v u="$1" '$1 == u { print $2 }' "$state/work/roster.txt.passwords"; }
for u in $admin $outsider; do
	useradd -m -s /bin/bash "$u"
	echo "$u:pw-$u-$$" | chpasswd
done

(umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$state/work/token")
token=$(cat "$state/work/token")
(cd "$state/work" && exec env GPUMEM_HUB_STATE="$state/hub" GPUMEM_ADMIN_TOKEN_FILE="$state/work/token" \
	GPUMEM_HUB_PORT=18000 GPUMEM_PROXY_API_PORT=18001 GPUMEM_HUB_API_PORT=18081 GPUMEM_MEM_LIMIT=1G \
	GPUMEM_COURSE_DIR="$state/course" GPUMEM_STUDENT_GROUP=$group GPUMEM_ADMINS=$admin GPUMEM_CGROUP=$cgroup \
	GPUMEM_IDLE_TIMEOUT=3599 GPUMEM_TMP_SIZE=256M GPUMEM_ACCEPT_CVE_2024_28233=1 \
	jupyterhub -f "$here/jupyterhub_config.py") >"$state/hub.log" 2>&1 &
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
server_state() { # server_state USER: ready, pending or stopped
	api GET "/users/$1" 2>/dev/null | python3 -c 'import json,sys; s=json.load(sys.stdin)["servers"].get("",{}); print("ready" if s.get("ready") else ("pending" if s.get("pending") else "stopped"))'
}
start_server() { # start_server USER: starts it and waits until ready (or 120 s)
	api POST "/users/$1" >/dev/null 2>&1 # may exist already; the server start below tells
	api POST "/users/$1/server" >/dev/null 2>&1
	for _ in $(seq 120); do
		case $(server_state "$1") in
		ready) return 0 ;;
		stopped) return 1 ;;
		esac
		sleep 1
	done
	return 1
}
stop_server() { # stop_server USER: stops it and waits until stopped (or 60 s)
	api DELETE "/users/$1/server" >/dev/null 2>&1
	for _ in $(seq 60); do
		[ "$(server_state "$1")" = stopped ] && return 0
		sleep 1
	done
	return 1
}

# --- 2. who may log in ----------------------------------------------------
login() { /usr/bin/python3 "$here/login.py" "$hub" "$1" "$2" >/dev/null 2>&1; }
login gpumem-s1 "$(password gpumem-s1)" && ok "a student logs in with the roster's password" ||
	bad "gpumem-s1 could not log in with the password add-students.sh made"
login $outsider "pw-$outsider-$$" && bad "$outsider, outside the group $group, logged in with its Unix password" ||
	ok "an account outside the group $group is refused, right password or not"
login $admin "pw-$admin-$$" && ok "the admin named in GPUMEM_ADMINS logs in" || bad "the admin $admin could not log in"
for i in 1 2 3 4 5; do login gpumem-s2 "wrong-$i"; done
if login gpumem-s2 "$(password gpumem-s2)"; then
	bad "after five wrong passwords gpumem-s2's right password still logs in: no throttle"
else
	ok "five wrong passwords lock the name gpumem-s2 (the right one is refused too)"
fi
login gpumem-s3 "$(password gpumem-s3)" && ok "the lock on gpumem-s2 does not lock gpumem-s3" ||
	bad "gpumem-s3 could not log in while gpumem-s2 was locked"
# 20 wrong logins at a time with made-up names from one address, for 12 s
# (PAM waits about 2 s after each failure; JupyterHub 3.0's one PAM thread
# once made a classmate wait 101 s): gpumem-s3's login from another address
# (its two requests, timed by login.py) takes under 2 s.
/usr/bin/python3 - "$here" "$hub" 12 <<'PY' &
import sys, threading, time
sys.path.insert(0, sys.argv[1])
from login import log_in
hub, stop = sys.argv[2], time.monotonic() + float(sys.argv[3])
def hammer(i):
    while time.monotonic() < stop:
        try:
            log_in(hub, "made-up-%d" % i, "wrong", "127.0.0.66")
        except Exception:
            time.sleep(0.1)
threads = [threading.Thread(target=hammer, args=(i,)) for i in range(20)]
for t in threads:
    t.start()
for t in threads:
    t.join()
PY
flood=$!
sleep 4
out=$(GPUMEM_LOGIN_SOURCE=127.0.0.7 /usr/bin/python3 "$here/login.py" "$hub" gpumem-s3 "$(password gpumem-s3)" 2>&1)
ms=$(sed -n 's/.* in \([0-9]*\) ms$/\1/p' <<<"$out")
wait "$flood"
refused=$(grep -c "from 127.0.0.66 refused" "$state/hub.log")
if grep -q "logged in" <<<"$out" && [ -n "$ms" ] && [ "$ms" -lt 2000 ]; then
	ok "a login flood from one address ($refused attempts refused at once): gpumem-s3's login from another took $ms ms"
else
	bad "a login flood from one address: gpumem-s3's login from another: $out"
fi

# --- 3. a symbolic link swapped in while the course is copied --------------
# The decoy stands for root's files (the hub's own code, /etc): root-owned,
# with a secret only root may read.
chmod 755 "$decoy"
echo secret >"$decoy/secret"
chmod 600 "$decoy/secret"
cat >"$state/watcher.sh" <<'EOF'
# As the student: whenever the copy's staging folder is a real folder, move
# it away and put a link to the decoy in its place, until the course
# appears, as a detached watcher would. (Against the spawner that copied as
# root, this put the course into the decoy and chowned the decoy's secret,
# and all of the course, to the student.)
cd "$HOME" || exit 1
n=0
while [ ! -e course ] && [ $n -lt 200000 ]; do
	n=$((n + 1))
	if [ -d .course.copying ] && [ ! -L .course.copying ]; then
		mv .course.copying moved-away-$n 2>/dev/null && ln -s "$1" .course.copying 2>/dev/null && echo "$n" >>swapped
	fi
done
EOF
chmod 644 "$state/watcher.sh"
HOME=/home/gpumem-s2 as gpumem-s2 setsid bash "$state/watcher.sh" "$decoy" </dev/null >/dev/null 2>&1 &
watcher=$!
start_server gpumem-s2
sleep 1
kill "$watcher" 2>/dev/null
swapped=$([ -f /home/gpumem-s2/swapped ] && echo "the link was swapped in" || echo "the copy finished before the swap")
if [ "$(stat -c %u "$decoy/secret")" = 0 ] && [ "$(ls -A "$decoy")" = secret ] && [ "$(stat -c %u "$decoy")" = 0 ]; then
	ok "the course copy followed no student link into root's files ($swapped; the decoy is unchanged)"
else
	bad "root's files changed through the student's link ($swapped): $(ls -lan "$decoy" | tail -n +2 | tr '\n' ';')"
fi
# gpumem-s2 starts over: their own folders go, as they could do themselves.
stop_server gpumem-s2
as gpumem-s2 sh -c 'cd /home/gpumem-s2 && rm -rf .course.copying course moved-away-* swapped'

# --- 4. homes -------------------------------------------------------------
modes=$(for s in $students; do stat -c %a "/home/$s"; done | sort -u | tr '\n' ' ')
[ "$modes" = "700 " ] && ok "the roster's homes are mode 700" || bad "the roster's homes have modes $modes"
as gpumem-s2 ls /home/gpumem-s1 >/dev/null 2>&1 && bad "gpumem-s2 can list gpumem-s1's home" ||
	ok "a classmate cannot list another student's home"
chmod 755 /home/gpumem-s3 # as Debian's useradd -m leaves it
if start_server gpumem-s3; then
	bad "gpumem-s3's server started with a home of mode 755"
elif grep -q "gpumem-s3's home /home/gpumem-s3 is mode 755, open to others; not starting" "$state/hub.log" &&
	[ "$(stat -c %a /home/gpumem-s3)" = 755 ]; then
	ok "an open home (755) starts no server and is left as it was (the spawner changes no home)"
else
	bad "gpumem-s3's open home: no refusal in the hub's log, or the home was changed ($(stat -c %a /home/gpumem-s3))"
fi
chmod 700 /home/gpumem-s3

# --- 4b. servers for students only -------------------------------------------
# An admin's token once started servers as the admin and as postgres (uid
# 101, because it owned its home): the spawner serves members of the group
# with a uid of 1000 or more, nobody else.
for u in $admin root; do
	if start_server "$u"; then
		bad "a server started for $u, who is not a student"
		stop_server "$u"
	elif grep -q "gpumem: $u is not in the group $group\|gpumem: $u has uid 0" "$state/hub.log"; then
		ok "no server for $u (not a student): the spawner refused it"
	else
		bad "no server for $u, but not for the spawner's reason: $(grep -m1 "$u" "$state/hub.log")"
	fi
done
if command -v crontab >/dev/null; then
	as gpumem-s1 sh -c 'echo "* * * * * true" | crontab -' 2>/dev/null && bad "gpumem-s1 installed a crontab" ||
		ok "cron is closed to students (/etc/cron.allow)"
fi

# What a student leaves in her home for her own server to load: a classic
# Notebook custom.js (served on the hub's origin, it once made an admin's
# click create a token for her), Jupyter config files and a .pth file in
# her Python user site (both would run code in the server itself).
as gpumem-s1 sh -c 'mkdir -p ~/.jupyter/custom && echo "/* gpumem-custom-js */" >~/.jupyter/custom/custom.js &&
	for f in jupyter_notebook_config.py jupyter_server_config.py; do
		echo "open(\"$HOME/gpumem-config-ran\", \"w\").close()" >~/.jupyter/$f
	done
	site=$(/usr/bin/python3 -m site --user-site) && mkdir -p "$site" &&
	echo "import os; open(os.path.expanduser(\"~/gpumem-pth-ran\"), \"w\").close()" >"$site/gpumem.pth"'

# --- 5, 6. the servers, the course and a gonb kernel -----------------------
for s in $students; do
	t0=$(date +%s)
	if start_server "$s"; then
		ok "$s: server started through the REST API in $(($(date +%s) - t0))s; course in ~$s/course: $(ls /home/$s/course/notebooks | wc -l) notebooks"
	else
		bad "$s: server not ready after 120s"
		tail -n 30 "$state/hub.log"
	fi
done
leaks=$(cd /home/gpumem-s1/course && ls -d solutions grader/hidden 2>/dev/null)
[ -z "$leaks" ] && [ -f /home/gpumem-s1/course/grader/cmd/grader/main.go ] &&
	ok "the course in a home is the student edition (the grader, no solutions/, no grader/hidden/)" ||
	bad "a student's ~/course holds: $leaks"
hidden=$(find "$course/grader/hidden" -name '*_test.go' | head -n 1)
as gpumem-s1 cat "$hidden" >/dev/null 2>&1 && bad "gpumem-s1 can read the instructor's hidden test $hidden" ||
	ok "a student cannot read the instructor's checkout (hidden tests, solutions)"
[ "$(stat -c %U:%a "$state/course")" = root:755 ] && ! as gpumem-s1 touch "$state/course/x" 2>/dev/null &&
	ok "the shared student edition is root's and read-only for students" || bad "students can change the shared edition $state/course"

# What a student's browser opens: JupyterLab at /lab where the servers'
# Python has it (Debian 13), else the classic Notebook at /tree (Debian 12),
# which the hub's log then says.
if /usr/bin/python3 -c 'import jupyterlab' 2>/dev/null; then
	want="/user/gpumem-s1/lab: JupyterLab"
else
	want="/user/gpumem-s1/tree: the classic Notebook"
	said=$(grep -m1 'JupyterLab is not installed' "$state/hub.log")
	[ -n "$said" ] && ok "without JupyterLab on this machine the hub's log says so: \"$said\"" ||
		bad "the hub serves the classic Notebook without saying so in its log"
fi
landed=$(/usr/bin/python3 "$here/login.py" "$hub" gpumem-s1 "$(password gpumem-s1)" --open 2>&1 | tail -n 1)
case ${landed#login: gpumem-s1: landed on } in
"$want"*) ok "gpumem-s1's browser, logged in on the hub, lands on ${landed#login: gpumem-s1: landed on }" ;;
*) bad "gpumem-s1's browser should land on $want, got: $landed" ;;
esac

for f in gpumem-config-ran gpumem-pth-ran; do
	[ -e "/home/gpumem-s1/$f" ] && bad "gpumem-s1's server ran her ~/$f code (a config file or .pth in her home)" ||
		ok "gpumem-s1's server loaded no code from her home (no ~/$f)"
done
customjs=$(/usr/bin/python3 - "$hub/user/gpumem-s1/custom/custom.js" "$token" <<'PY' 2>&1
import sys, urllib.error, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "token " + sys.argv[2]})
try:
    print(urllib.request.urlopen(req, timeout=30).read().decode(errors="replace"))
except urllib.error.HTTPError as e:
    print("HTTP", e.code)
PY
)
grep -q gpumem-custom-js <<<"$customjs" && bad "gpumem-s1's ~/.jupyter/custom/custom.js is served on the hub's origin" ||
	ok "gpumem-s1's ~/.jupyter/custom/custom.js is not served (/custom/custom.js: $(head -c 60 <<<"$customjs" | tr '\n' ' '))"

memcg=/sys/fs/cgroup/memory/$cgroup
for s in $students; do
	t0=$(date +%s)
	if out=$(/usr/bin/python3 "$here/run_cell.py" "$hub/user/$s/" "$token" 00-welcome.ipynb "$course/lessons/00-welcome.md#1" "$course/lessons/00-welcome.md#2" 2>&1) &&
		grep -q 'device: *sim:0' <<<"$out"; then
		ok "$s: gonb kernel ran the course's first cells in $(($(date +%s) - t0))s ($(grep -m1 'device:' <<<"$out" | tr -s ' '))"
	else
		bad "$s: running a cell failed:"
		sed "s/^/    /" <<<"$out" | grep -v "^ *$" | tail -n 20
	fi
	rss=$(awk '/^total_rss / { printf "%d MiB", $2 / 1048576 }' "$memcg/student-$s/memory.stat" 2>/dev/null)
	peak=$(awk '{ printf "%d MiB", $1 / 1048576 }' "$memcg/student-$s/memory.max_usage_in_bytes" 2>/dev/null)
	[ -n "$peak" ] && echo "hub-test: $s uses $rss resident now, peak $peak (with page cache)"
done

# --- 6b. a classmate's kernel -------------------------------------------------
# Kernels listen on their server's 127.0.0.1, and subscribing to a kernel's
# IOPub port needs no key: once, a student read a classmate's cell output
# that way. gpumem-s2's cell dials every port gpumem-s1's server and kernel
# listen on; each server's own network namespace must make them unreachable.
# A kernel of gpumem-s1's, started through its server's API, so that its
# five ports (shell, IOPub, stdin, control, heartbeat) are open.
/usr/bin/python3 - "$hub/user/gpumem-s1/api/kernels" "$token" <<'PY' >/dev/null 2>&1
import sys, urllib.request
req = urllib.request.Request(sys.argv[1], data=b'{"name": "gonb"}', method="POST",
                             headers={"Authorization": "token " + sys.argv[2], "Content-Type": "application/json"})
urllib.request.urlopen(req, timeout=60).read()
PY
sleep 5
s1pid=$(pgrep -u gpumem-s1 -f jupyterhub-singleuser | head -n 1)
ports=$([ -n "$s1pid" ] && nsenter -t "$s1pid" -n ss -Hltn 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }' | sort -u | tr '\n' ' ')
if [ -z "$ports" ]; then
	bad "gpumem-s1's server listens on no port in its namespace (pid ${s1pid:-none})"
else
	cat >"$state/work/dial.go" <<EOF
%%
reached := 0
for _, p := range strings.Fields("$ports") {
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+p, time.Second); err == nil {
		reached++
		c.Close()
	}
}
fmt.Println("reached", reached, "of", len(strings.Fields("$ports")))
entries, _ := os.ReadDir("/proc")
var pids []string
for _, e := range entries {
	if e.Name()[0] >= '0' && e.Name()[0] <= '9' {
		pids = append(pids, e.Name())
	}
}
fmt.Println("procs", strings.Join(pids, " "))
EOF
	printf 'import (\n\t"fmt"\n\t"net"\n\t"os"\n\t"strings"\n\t"time"\n)\n' >"$state/work/dial-imports.go"
	out=$(/usr/bin/python3 "$here/run_cell.py" "$hub/user/gpumem-s2/" "$token" 00-welcome.ipynb "$state/work/dial-imports.go" "$state/work/dial.go" 2>&1)
	if grep -q "^reached 0 of" <<<"$out"; then
		ok "gpumem-s2's cell reaches none of gpumem-s1's $(wc -w <<<"$ports") ports, its server's and its kernel's ($ports): each server has its own network namespace"
	else
		bad "gpumem-s2's cell and gpumem-s1's ports ($ports): $(grep -m1 reached <<<"$out" || tail -n 3 <<<"$out")"
	fi
	procs=" $(grep -m1 '^procs' <<<"$out" | cut -d' ' -f2-) "
	seen=""
	for pid in "$hub_pid" "$s1pid" 1; do
		case $procs in *" $pid "*) seen="$seen $pid" ;; esac
	done
	if [ "$procs" = "  " ]; then
		bad "gpumem-s2's cell listed no process in /proc: $(tail -n 3 <<<"$out")"
	elif [ -z "$seen" ]; then
		ok "gpumem-s2's /proc lists only her own processes ($(wc -w <<<"$procs")): not the hub ($hub_pid), init, or gpumem-s1's server ($s1pid)"
	else
		bad "gpumem-s2's /proc shows others' processes:$seen"
	fi
fi

# --- 7. what a stopped server leaves ----------------------------------------
cat >"$state/work/imports.go" <<'EOF'
import (
	"fmt"
	"os"
	"os/exec"
)
EOF
cat >"$state/work/leave.go" <<'EOF'
%%
cmd := exec.Command("setsid", "sleep", "1000")
if err := cmd.Start(); err != nil {
	panic(err)
}
if err := os.WriteFile("/dev/shm/gpumem-left", make([]byte, 64<<20), 0o644); err != nil {
	panic(err)
}
if err := os.WriteFile("/tmp/gpumem-left", []byte("x"), 0o644); err != nil {
	panic(err)
}
if out, err := exec.Command("ipcmk", "-M", "67108864").CombinedOutput(); err != nil {
	panic(string(out))
}
fmt.Println("detached", cmd.Process.Pid)
EOF
out=$(/usr/bin/python3 "$here/run_cell.py" "$hub/user/gpumem-s1/" "$token" 00-welcome.ipynb "$state/work/imports.go" "$state/work/leave.go" 2>&1)
if grep -q '^detached' <<<"$out"; then
	for f in /dev/shm/gpumem-left /tmp/gpumem-left; do
		[ -e "$f" ] && bad "gpumem-s1's $f is the host's: the server's /tmp and /dev/shm are not private" ||
			ok "gpumem-s1's $f is private to the server (the host has none)"
	done
	# System V shared memory: the server's own IPC namespace.
	shm=$(ipcs -m -c 2>/dev/null | awk '$3 == "gpumem-s1" || $5 == "gpumem-s1"')
	[ -z "$shm" ] && ok "gpumem-s1's System V segment is in the server's IPC namespace (the host sees none)" ||
		bad "gpumem-s1's System V segment is the host's: $shm"
	stop_server gpumem-s1
	sleep 1
	left=$(ps -u gpumem-s1 -o stat=,pid=,args= 2>/dev/null | awk '$1 !~ /^Z/')
	[ -z "$left" ] && ok "stopping gpumem-s1's server killed its detached process" ||
		bad "processes of gpumem-s1 outlive the server: $left"
	[ ! -d "$memcg/student-gpumem-s1" ] && [ ! -d "/sys/fs/cgroup/$cgroup/student-gpumem-s1" ] &&
		ok "stopping the server removed gpumem-s1's cgroup" || bad "gpumem-s1's cgroup is still there after the stop"
	start_server gpumem-s1 || bad "gpumem-s1's server did not start again"
else
	bad "the cell leaving a detached process failed:"
	sed 's/^/    /' <<<"$out" | tail -n 10
fi

# --- 8. over the memory limit ----------------------------------------------
cat >"$state/work/hog.go" <<'EOF'
%%
b := make([]byte, 3<<29) // 1.5 GiB, touched so it is resident
for i := 0; i < len(b); i += 4096 {
	b[i] = 1
}
fmt.Println("allocated", len(b))
EOF
printf 'import "fmt"\n' >"$state/work/import.go"
out=$(/usr/bin/python3 "$here/run_cell.py" "$hub/user/gpumem-s3/" "$token" 00-welcome.ipynb "$state/work/import.go" "$state/work/hog.go" 2>&1)
oom=$(awk '/^oom_kill / { print $2 }' "$memcg/student-gpumem-s3/memory.oom_control" 2>/dev/null)
[ -z "$oom" ] && oom=$(awk '/^oom_kill / { print $2 }' "/sys/fs/cgroup/$cgroup/student-gpumem-s3/memory.events" 2>/dev/null)
if ! grep -q '^allocated' <<<"$out" && [ "${oom:-0}" -ge 1 ]; then
	ok "gpumem-s3: a cell allocating 1.5 GiB over the 1G limit was killed by the OOM killer (oom_kill=$oom): $(grep -m1 -i -E 'kill|signal|error' <<<"$out" | head -c 120)"
else
	bad "gpumem-s3: the over-limit cell was not stopped by its limit (oom_kill=${oom:-?}):"
	sed 's/^/    /' <<<"$out" | tail -n 10
fi
api GET / >/dev/null 2>&1 && ok "the hub still answers after the OOM kill" || bad "the hub is down after the OOM kill"
if out=$(/usr/bin/python3 "$here/run_cell.py" "$hub/user/gpumem-s2/" "$token" 00-welcome.ipynb "$course/lessons/00-welcome.md#1" "$course/lessons/00-welcome.md#2" 2>&1) &&
	grep -q 'device: *sim:0' <<<"$out"; then
	ok "gpumem-s2's server still runs cells"
else
	bad "gpumem-s2's server failed after gpumem-s3's OOM kill: $out"
fi
echo "hub-test: gpumem-s3's server after the kill: $(server_state gpumem-s3)"

# --- grading on one machine (grade-class.sh) ---------------------------------
# gpumem-s1 hands in the reference solution; gpumem-s2 replaces their file
# with a link to /etc/shadow, hoping root collects it; gpumem-s3 puts a FIFO
# there: once, root read each file with `cat` as the student, which the FIFO
# blocked forever (a process of theirs in root's terminal, to ptrace).
ex=01-strided-copy
as gpumem-s1 sh -c 'cat >"$1"' sh /home/gpumem-s1/course/exercises/$ex/copy.go <"$course/solutions/$ex/copy.go"
as gpumem-s2 ln -sf /etc/shadow /home/gpumem-s2/course/exercises/$ex/copy.go
as gpumem-s3 sh -c 'rm -f "$1" && mkfifo "$1"' sh /home/gpumem-s3/course/exercises/$ex/copy.go
t0=$(date +%s)
if GPUMEM_STUDENT_GROUP=$group GPUMEM_GRADING=$state/grading timeout 600 bash "$here/grade-class.sh" $ex >"$state/work/grade.log" 2>&1; then
	csv=$state/grading/$ex/grades.csv
	row() { awk -F, -v s="$1" '$1 == s { print $2 "/" $3 " " $4 "%" }' "$csv"; }
	ok "grade-class.sh graded the class in $(($(date +%s) - t0)) s: gpumem-s1 (the solution) $(row gpumem-s1), gpumem-s3 (a FIFO) $(row gpumem-s3), gpumem-s2 (a link) $(row gpumem-s2)"
	grep -q 'gpumem-s3: could not read your submission: .*a FIFO' "$state/work/grade.log" &&
		grep -qs 'could not read your submission' /home/gpumem-s3/course/feedback/$ex.json &&
		ok "gpumem-s3's FIFO held up nobody and gave them a clear row and feedback" ||
		bad "gpumem-s3's FIFO got no 'could not read your submission' row: $(grep gpumem-s3 "$state/work/grade.log")"
	[ "$(awk -F, '$1 == "gpumem-s1" { print $4 }' "$csv")" = 100.0 ] && [ "$(awk -F, '$1 == "gpumem-s3" { print $2 }' "$csv")" = 0 ] ||
		bad "the solution did not get full marks or the stub scored: $(cat "$csv")"
	if grep -rqs 'root:' "$state/grading/$ex/submissions/gpumem-s2" "$state/grading/$ex/feedback/gpumem-s2.json"; then
		bad "collecting gpumem-s2's files followed their link to /etc/shadow"
	else
		ok "collecting followed no student's link (gpumem-s2's copy.go -> /etc/shadow gave nothing)"
	fi
	[ "$(stat -c %U:%a "$state/grading/$ex")" = root:700 ] && [ "$(stat -c %a "$csv")" = 600 ] &&
		ok "the gradebook and feedback are root's and private (folder 700, grades.csv 600)" ||
		bad "the gradebook is readable by others: $(ls -ld "$state/grading/$ex" "$csv")"
	fb=/home/gpumem-s1/course/feedback/$ex.json
	[ "$(stat -c %U "$fb" 2>/dev/null)" = gpumem-s1 ] && ok "gpumem-s1 got their feedback in ~/course/feedback/$ex.json, as their own file" ||
		bad "gpumem-s1 has no feedback file of their own at $fb"
else
	bad "grade-class.sh failed:"
	tail -n 15 "$state/work/grade.log" | sed 's/^/    /'
fi

# --- 9. the idle culler ------------------------------------------------------
# The hub's own culler (an hour here) is running; a second one, run once
# with a 2 s timeout, stops the servers.
pgrep -f "$here/idle_culler.py 3599" >/dev/null && ok "the hub's idle culler runs" ||
	bad "the hub's idle culler is not running: $(grep -i 'culler' "$state/hub.log" | tail -n 2)"
sleep 3
if JUPYTERHUB_API_URL=$hub/hub/api JUPYTERHUB_API_TOKEN=$token /usr/bin/python3 "$here/idle_culler.py" 2 --once | sed 's/^/    /' &&
	[ "$(server_state gpumem-s1)" = stopped ]; then
	ok "the idle culler stopped a server idle for longer than its timeout"
else
	bad "the idle culler left gpumem-s1's idle server running ($(server_state gpumem-s1))"
fi

# --- 10. the hub's files, and its stop ---------------------------------------
start_server gpumem-s2 || bad "gpumem-s2's server did not start again after the culler"
[ -f "$state/hub/jupyterhub-proxy.pid" ] && [ ! -e "$course/jupyterhub-proxy.pid" ] && [ ! -e "$state/work/jupyterhub-proxy.pid" ] &&
	ok "the proxy's pid file is in the hub's state folder, not in the course or the working folder" ||
	bad "the proxy's pid file is not (only) in the state folder: $(ls "$state"/hub "$course"/jupyterhub-proxy.pid "$state"/work/jupyterhub-proxy.pid 2>&1 | tr '\n' ' ')"
kill "$hub_pid"
wait "$hub_pid" 2>/dev/null
hub_pid=
sleep 2
if (: </dev/tcp/127.0.0.1/18001) 2>/dev/null || (: </dev/tcp/127.0.0.1/18000) 2>/dev/null; then
	bad "the proxy still listens after the hub stopped (SIGTERM)"
else
	ok "stopping the hub (SIGTERM) stopped its proxy"
fi
left=$(for s in $students; do ps -u "$s" -o stat=,pid=,args= 2>/dev/null | awk '$1 !~ /^Z/'; done)
[ -z "$left" ] && ok "stopping the hub stopped every student's processes" || bad "processes outlive the hub: $left"

if [ "$failed" != 0 ]; then
	echo "hub-test: the hub's log (the servers' included) ends with:"
	grep -v -E '(GET|POST) /hub/api/users' "$state/hub.log" | tail -n 40 | sed 's/^/    /'
	install -m 600 "$state/hub.log" /var/tmp/gpumem-hub-test-last.log
	echo "hub-test: the whole log: /var/tmp/gpumem-hub-test-last.log"
fi
echo "hub-test: $([ "$failed" = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - start))s"
exit "$failed"
