#!/usr/bin/env bash
# image-test.sh checks the classroom image as a student meets it, in a
# running container with the network off (--network none):
#
#   - it runs as uid 1000, not root (the container's user and Jupyter's process);
#   - `go version` is the image's own Go, for its architecture, the
#     container's machine is that architecture, and gonb, gopls and
#     goimports are binaries for it;
#   - JupyterLab serves on 8888, refuses requests without its token, and lists
#     the gonb kernel in /api/kernelspecs;
#   - gopls is on the gonb kernel's PATH;
#   - jupyterhub-singleuser (what a hub, deploy/k8s, starts per student) runs;
#   - no solutions and no hidden tests anywhere in it (the student edition);
#   - the image's build caches (Go's, gopls's) are dated 2100, and
#     nothing the container compiles rewrites their entries;
#   - `grader check` works inside;
#   - every notebook executes top to bottom (scripts/run-notebooks.sh);
#   - in headless Chromium, run in the container's network namespace, a
#     student's session in JupyterLab: the welcome lesson run cell by cell,
#     GoNB's completion, an exercise edited and checked
#     (scripts/browser-check/lab_check.py; screenshots in $SITE_DIR/browser,
#     default site/browser);
#   - JupyterLab's news announcements are off;
#   - make lab-image serves this working tree from the image
#     (scripts/lab-image-test.sh);
#   - the image's size: at most 1719 MB (IMAGE_MAX_MB), the bookworm image's.
#
# and, before the container starts, that a second build with nothing changed
# reuses every cached layer (the image's ID stays the same). The quick checks
# come first, the notebooks (minutes) last.
#
# An image of another architecture than this machine's (make
# image-test-arm64: the arm64 image of make image-multiarch, as a student
# on Apple silicon meets it) runs under qemu-user-static
# (scripts/binfmt-arm64.sh), about eleven times slower: the same checks,
# with longer waits, except the second build, the browser test and make
# lab-image (each a check of the Dockerfile or the host, not of the
# image's architecture), and by default lesson 02 alone
# (docs/instructors.md, "Both architectures", has the times).
#
# `make image-test` builds the image first, then runs this. Environment:
# IMAGE (default gpumem-course); IMAGE_TEST_REBUILD=0 skips the second build;
# NOTEBOOKS, a list of notebooks to execute instead of all of them (under
# emulation, default notebooks/02-allocator.ipynb); SITE_DIR (default
# site). Without chromium the browser test is skipped, except in CI
# (CI=true), where it fails.
set -uo pipefail
cd "$(dirname "$0")/.."
image=${IMAGE:-gpumem-course}
name=gpumem-image-test-$$
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
failed=0
test_start=$(date +%s)

ok() { printf 'image-test: ok    %s\n' "$*"; }
bad() {
	printf 'image-test: FAIL  %s\n' "$*"
	failed=1
}
in_box() { podman exec "$name" "$@"; }

image_arch=$(podman image inspect --format '{{.Architecture}}' "$image" 2>/dev/null) || {
	echo "image-test: no image $image here: make image builds it (make image-multiarch the arm64 one)" >&2
	exit 1
}
host_arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
# Under emulation everything takes about eleven times longer: Jupyter
# gets five minutes to answer, each request 20 s, each notebook cell an hour.
emulated=0 platform=() wait_step=1 request_s=5
if [ "$image_arch" != "$host_arch" ]; then
	[ "$image_arch" = arm64 ] || {
		echo "image-test: $image is a linux/$image_arch image: this machine ($host_arch) runs its own and arm64 ones only" >&2
		exit 1
	}
	# shellcheck source=scripts/binfmt-arm64.sh
	. scripts/binfmt-arm64.sh
	binfmt_arm64 || {
		echo "image-test: $image is a linux/arm64 image, which runs here under qemu, and $binfmt_arm64_why" >&2
		exit 1
	}
	emulated=1 platform=(--platform "linux/$image_arch") wait_step=5 request_s=20
	books=${NOTEBOOKS:-notebooks/02-allocator.ipynb}
	echo "image-test: $image is linux/$image_arch, run under qemu on this $host_arch machine: slow (minutes); no rebuild, browser or make lab-image checks; notebooks: $books"
else
	books=${NOTEBOOKS:-}
fi

if [ "${IMAGE_TEST_REBUILD:-$((1 - emulated))}" != 0 ]; then
	before=$(podman image inspect --format '{{.Id}}' "$image")
	rebuild_start=$(date +%s)
	if log=$(IMAGE=$image IMAGE_ARCH=$image_arch bash scripts/image-build.sh 2>&1) && [ "$(podman image inspect --format '{{.Id}}' "$image")" = "$before" ]; then
		ok "a second build reuses the cache: $(grep -c 'Using cache' <<<"$log") steps from cache, the same image, $(($(date +%s) - rebuild_start)) s"
	else
		bad "a second build with nothing changed did not reuse the cache:"
		grep -v 'Using cache' <<<"$log" | tail -n 30 | sed 's/^/    /'
	fi
fi

# --runtime runc: podman's default runtime (crun) refuses this CI machine's
# hybrid cgroup layout; runc runs the container. The explicit ulimits: runc
# is not allowed to raise the open-file and process limits to podman's
# defaults (about a million) on such a host; 16384 is plenty for Jupyter.
podman run --runtime runc --ulimit nofile=16384:16384 --ulimit nproc=16384:16384 \
	-d --rm --name "$name" --network none "${platform[@]}" \
	-e JUPYTER_TOKEN="$token" "$image" >/dev/null || {
	echo "image-test: the container did not start" >&2
	exit 1
}
trap 'podman rm -f -t 2 "$name" >/dev/null 2>&1' EXIT

# Jupyter answers within a few seconds; a slow machine gets 60 tries
# (under emulation, 60 five seconds apart).
api() { # api PATH [TOKEN]: prints the HTTP status, then the body
	podman exec -i "$name" python3 - "$1" "${2:-}" "$request_s" <<'PY'
import sys, urllib.request, urllib.error
path, token, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
req = urllib.request.Request("http://127.0.0.1:8888" + path)
if token:
    req.add_header("Authorization", "token " + token)
try:
    with urllib.request.urlopen(req, timeout=timeout) as r:
        print(r.status); print(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code)
except Exception as e:
    print(0); print(e)
PY
}
lab_start=$(date +%s)
for _ in $(seq 60); do
	[ "$(api /api/status "$token" | head -n 1)" = 200 ] && break
	sleep "$wait_step"
done
lab_s=$(($(date +%s) - lab_start))

uid=$(in_box id -u)
[ "$uid" = 1000 ] && ok "exec runs as uid 1000" || bad "exec runs as uid $uid, want 1000"
server_uid=$(in_box awk '/^Uid:/ { print $2 }' /proc/1/status)
[ "$server_uid" = 1000 ] && ok "Jupyter (pid 1) runs as uid 1000" || bad "Jupyter runs as uid $server_uid, want 1000"

# The image's own Go, for the image's architecture, on PATH: the build
# compiles with the build machine's Go mounted beside it (Dockerfile), which
# must leave nothing behind, and /usr/local/go must survive the mounts.
go_version=$(in_box go version 2>&1)
if [[ $go_version == "go version go"*" linux/$image_arch" ]] && ! in_box test -e /opt/build-go; then
	ok "the image's Go runs: $go_version"
else
	bad "the image's Go for linux/$image_arch is not what runs (go version: $go_version; /opt/build-go: $(in_box ls -d /opt/build-go 2>&1))"
fi
# The container's machine, and the tools' ELF machine field (e_machine,
# bytes 18-19: 0x3e x86-64, 0xb7 AArch64): the architecture throughout,
# whether natively or under qemu.
case $image_arch in
amd64) want_machine=x86_64 want_elf=3e00 ;;
arm64) want_machine=aarch64 want_elf=b700 ;;
*) want_machine=$image_arch want_elf=unknown ;;
esac
machine=$(in_box uname -m)
[ "$machine" = "$want_machine" ] && ok "the container's machine is $machine" || bad "the container's machine is $machine, want $want_machine"
elf=$(in_box bash -c 'for t in bin/gonb bin/gopls bin/goimports; do od -An -tx1 -j18 -N2 "$t" | tr -d " \n"; echo; done' | sort -u | paste -sd ' ')
[ "$elf" = "$want_elf" ] && ok "gonb, gopls and goimports are linux/$image_arch binaries" ||
	bad "gonb, gopls and goimports are not all linux/$image_arch ELF binaries (e_machine: $elf, want $want_elf)"

lab=$(api /lab "$token")
if [ "$(head -n 1 <<<"$lab")" = 200 ] && grep -Eq '"appName": *"JupyterLab"' <<<"$lab"; then
	ok "JupyterLab $(grep -Eo '"appVersion": *"[^"]*"' <<<"$lab" | cut -d'"' -f4) answers on /lab"
else
	bad "/lab with the token does not serve JupyterLab: $(head -c 300 <<<"$lab")"
fi
# No news toast over the lessons: JupyterLab's announcements plugin (which
# asks to fetch Jupyter's news feed) is disabled in the image's labconfig.
if tail -n +2 <<<"$lab" | python3 -c '
import json, re, sys
m = re.search(r"<script id=\"jupyter-config-data\" type=\"application/json\">(.*?)</script>", sys.stdin.read(), re.S)
sys.exit(0 if m and "@jupyterlab/apputils-extension:announcements" in json.loads(m.group(1)).get("disabledExtensions", []) else 1)'; then
	ok "JupyterLab's news announcements are disabled (page config)"
else
	bad "JupyterLab's page config does not disable @jupyterlab/apputils-extension:announcements"
fi
default=$(podman inspect --format '{{join .Config.Cmd " "}}' "$image")
grep -q -- '--LabApp.default_url=/lab/tree/notebooks' <<<"$default" && ok "the image's command opens JupyterLab at notebooks/" ||
	bad "the image's command does not open JupyterLab at notebooks/: $default"

status=$(api /api/kernelspecs | head -n 1)
[ "$status" = 403 ] && ok "Jupyter on 8888 refuses a request without its token (403)" ||
	bad "/api/kernelspecs without the token answered $status, want 403"
specs=$(api /api/kernelspecs "$token")
if [ "$(head -n 1 <<<"$specs")" = 200 ] && tail -n +2 <<<"$specs" | python3 -c \
	'import json, sys; sys.exit(0 if "gonb" in json.load(sys.stdin)["kernelspecs"] else 1)'; then
	ok "Jupyter on 8888 with the token lists the gonb kernel in /api/kernelspecs ($lab_s s to answer)"
else
	bad "/api/kernelspecs with the token: $(head -c 300 <<<"$specs")"
fi

# GoNB starts gopls (completion, hover help) when the kernel's PATH finds
# it, and logs a warning in every kernel otherwise.
gopls=$(in_box bash -c 'PATH=$(python3 -c "import json; print(json.load(open(\"$JUPYTER_DATA_DIR/kernels/gonb/kernel.json\"))[\"env\"][\"PATH\"])") command -v gopls')
[ -n "$gopls" ] && ok "the gonb kernel's PATH finds gopls ($gopls)" || bad "gopls is not on the gonb kernel's PATH"

# The hub (deploy/k8s) starts each student's server as
# jupyterhub-singleuser, as the image's user.
version=$(in_box jupyterhub-singleuser --version 2>&1)
if [ $? = 0 ] && [ "$(in_box id -u)" = 1000 ]; then
	ok "jupyterhub-singleuser --version runs as uid 1000: $(tail -n 1 <<<"$version")"
else
	bad "jupyterhub-singleuser --version failed: $(head -c 300 <<<"$version")"
fi

# Every student's container: the student edition only.
leaks=$(in_box bash -c 'ls -d solutions grader/hidden 2>/dev/null; find / -xdev \( -path /proc -o -path "*/testdata" \) -prune -o \( -name "*_hidden_test.go" -o -name grade.json \) -print 2>/dev/null | head -n 5')
[ -z "$leaks" ] && ok "the image holds no solutions/, no grader/hidden/, no hidden test or grade.json anywhere" ||
	bad "the image holds what only the grader may: $leaks"

# The image's build caches, Go's and gopls's, are dated 2100 (the
# Dockerfile): each tool rewrites the time of an entry it uses an hour or
# more after that time, which copies the whole file up into the layer or
# container that uses it (a course layer built two hours after its deps
# layer grew by 326 MB), and deletes entries older than five days, so a
# week-old image would compile gpukit anew in every container
# (cmd/go/internal/cache/cache.go: mtimeInterval, trimLimit; gopls's
# internal/filecache). Checked before anything compiles here; after the
# checks, the notebooks and the browser session below, podman diff shows
# whether any of the image's entries was rewritten.
go_cache=$(in_box go env GOCACHE)
gopls_cache=$(in_box bash -c 'echo "$HOME/.cache/gopls"')
cache_old=$(in_box find "$go_cache" "$gopls_cache" -mindepth 2 ! -newermt 2099-01-01 | wc -l)
cache_all=$(in_box find "$go_cache" "$gopls_cache" -mindepth 2 | wc -l)
[ "$cache_old" = 0 ] && [ "$cache_all" -gt 0 ] && ok "the image's $cache_all build cache entries (Go's, gopls's) are dated 2100: neither tool will rewrite or delete them" ||
	bad "$cache_old of the image's $cache_all build cache entries (Go's, gopls's) are dated before 2099: the go command and gopls copy them up when they use them an hour later and delete them after five days (Dockerfile)"

# Every exercise checks offline, and from the image's build cache: a check
# that compiled gpukit and the standard library anew (without the image's
# warm-up, 17 to 22 s for a student's first check in a fresh container)
# would grow the cache by 78 MB or more; a warm check of all 17 grew it by
# 13-18 MB here (each exercise's own package and tests).
if in_box test -d grader/cmd/grader; then
	check_start=$(date +%s)
	cache_kb() { in_box du -sk "$go_cache" | cut -f1; }
	before=$(cache_kb)
	if ! in_box ls -d exercises/01-shared-storage >/dev/null 2>&1; then
		bad "grader/cmd/grader is in the image but exercises/ holds no exercise to check"
	elif in_box go run ./grader/cmd/grader check --all 2>&1 | sed 's/^/    /'; [ "${PIPESTATUS[0]}" = 0 ]; then
		ok "grader check --all works offline ($(($(date +%s) - check_start)) s)"
		grew=$(($(cache_kb) - before))
		[ "$grew" -lt 40000 ] && ok "grader check --all compiled from the image's warm build cache (it grew by $((grew / 1024)) MB)" ||
			bad "grader check --all grew the build cache by $((grew / 1024)) MB: the image did not warm what checks compile (Dockerfile)"
	else
		bad "grader check --all failed (above)"
	fi
else
	bad "grader/cmd/grader is not in the image"
fi

network=$(podman inspect --format '{{.HostConfig.NetworkMode}}' "$name")
echo "image-test: notebooks, with network mode '$network':"
books_start=$(date +%s)
if [ -n "$books" ]; then
	# Some notebooks: run, not kept (CI's NOTEBOOKS_EXECUTED wants them all).
	# shellcheck disable=SC2086 # a list of notebooks
	if in_box env NOTEBOOK_CELL_TIMEOUT=$((emulated ? 3600 : 600)) bash scripts/run-notebooks.sh $books 2>&1 | sed 's/^/    /'; [ "${PIPESTATUS[0]}" = 0 ]; then
		ok "$books executed top to bottom offline ($(($(date +%s) - books_start)) s)"
	else
		bad "$books failed offline (above)"
	fi
else
	# The executed copies come out to $SITE_DIR/executed-image, where CI's
	# make test finds them (NOTEBOOKS_EXECUTED, scripts/run-notebooks.sh)
	# instead of executing every notebook a second time; only after all
	# passed.
	executed=${SITE_DIR:-site}/executed-image
	rm -rf "$executed"
	if in_box env NOTEBOOK_KEEP=/tmp/gpumem-executed bash scripts/run-notebooks.sh 2>&1 | sed 's/^/    /'; [ "${PIPESTATUS[0]}" = 0 ]; then
		ok "every notebook executes top to bottom offline ($(($(date +%s) - books_start)) s)"
		copied=$(mktemp -d)
		if podman cp "$name:/tmp/gpumem-executed/." "$copied" && mkdir -p "$executed" &&
			find "$copied" -maxdepth 1 -type f -name '*.ipynb' -exec cp -t "$executed" {} +; then
			ok "the executed notebooks are in $executed ($(ls "$executed" | wc -l) files, for NOTEBOOKS_EXECUTED)"
		else
			bad "could not copy the executed notebooks out of the container"
		fi
		rm -rf "$copied"
	else
		bad "a notebook failed offline (above)"
	fi
fi

# Last: the browser test edits an exercise, which the notebooks above check.
# (Run beside the notebooks instead, in a second container of the image,
# with the second build in the background too, the checks after the first
# build took 264 s instead of 233, and kept the two cores busy 503 s
# instead of 394: lessons 02 and 09 took 93-95 s instead of about 30, and
# the browser session 81 s instead of 56; 2 cores, 2026-12-01.)
shots=${SITE_DIR:-site}/browser
if [ "$emulated" = 1 ]; then
	echo "image-test: SKIP  the browser test and make lab-image under emulation (the amd64 image's make image-test runs them)"
elif command -v chromium >/dev/null 2>&1 || [ -n "${CHROMIUM:-}" ]; then
	pid=$(podman inspect --format '{{.State.Pid}}' "$name")
	echo "image-test: JupyterLab in headless Chromium, in the container's network namespace:"
	browser_start=$(date +%s)
	# A hang ends; a slow machine does not fail (lab_check.py waits up to 10
	# minutes for the first completion, and reports how long it took).
	if timeout 1800 nsenter --net="/proc/$pid/ns/net" /usr/bin/python3 scripts/browser-check/lab_check.py \
		http://127.0.0.1:8888 "$token" "$shots" 2>&1 | sed 's/^/    /'; [ "${PIPESTATUS[0]}" = 0 ]; then
		ok "a student's session in JupyterLab works in Chromium ($(($(date +%s) - browser_start)) s; screenshots in $shots)"
	else
		bad "the browser test failed (above; screenshots in $shots)"
	fi
elif [ "${CI:-}" = true ]; then
	bad "chromium is not installed, and CI must run the browser test (apt-get install chromium)"
else
	echo "image-test: SKIP  the browser test: chromium not installed (apt-get install chromium)"
fi

# The checks, the notebooks and the browser session above compiled from
# the image's build caches: none of the image's entries may have been
# copied into the container for a new time (podman diff: C, changed, is a
# copy-up; the folders that hold entries change as new entries go in).
# The tools do rewrite a few small index entries (gopls's, of 32 bytes;
# 71-86 entries, 2-3 KB, here), which is no cost; the image's outputs copied up
# would be megabytes (295 entries before the Dockerfile dated them 2100).
rewritten=$(podman diff "$name" | awk -v go="$go_cache/" -v gopls="$gopls_cache/" '
	$1 != "C" { next }
	index($2, go) == 1 && split(substr($2, length(go) + 1), p, "/") >= 2 { print $2 }
	index($2, gopls) == 1 && split(substr($2, length(gopls) + 1), p, "/") >= 3 { print $2 }')
rewritten_n=$(grep -c . <<<"$rewritten")
rewritten_kb=0
if [ "$rewritten_n" -gt 0 ]; then
	rewritten_kb=$(podman exec -i "$name" xargs -r du -sb <<<"$rewritten" | awk '{ b += $1 } END { printf "%d", b / 1024 }')
fi
if [ "$rewritten_kb" -lt 1024 ]; then
	ok "the container copied up none of the image's build cache outputs (podman diff: $rewritten_n small entries rewritten, $rewritten_kb KB)"
else
	bad "the container copied $rewritten_n of the image's build cache entries, $((rewritten_kb / 1024)) MB, into its own layer (podman diff): $(head -n 5 <<<"$rewritten" | tr '\n' ' ')"
fi

# make lab-image: the same image serving this working tree (seconds).
if [ "$emulated" = 1 ]; then
	: # said above
elif IMAGE=$image bash scripts/lab-image-test.sh 2>&1 | sed 's/^/    /'; [ "${PIPESTATUS[0]}" = 0 ]; then
	ok "make lab-image serves this tree in JupyterLab from the image (scripts/lab-image-test.sh)"
else
	bad "make lab-image failed (above)"
fi

# Every student downloads it: no larger than the bookworm image was
# (1719 MB; IMAGE_MAX_MB for another variant).
size=$(podman image inspect --format '{{.Size}}' "$image")
max_mb=${IMAGE_MAX_MB:-1719}
if [ "$size" -le $((max_mb * 1000000)) ]; then
	ok "image $image is $(awk -v s="$size" 'BEGIN { printf "%.0f MB", s / 1e6 }') (at most $max_mb MB)"
else
	bad "image $image is $(awk -v s="$size" 'BEGIN { printf "%.0f MB", s / 1e6 }'), over $max_mb MB (podman history $image shows which layer grew)"
fi
echo "image-test: the checks took $(($(date +%s) - test_start)) s"
[ "$failed" = 0 ] && echo "image-test: passed" || echo "image-test: FAILED"
exit "$failed"
