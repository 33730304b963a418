#!/usr/bin/env bash
# setup.sh makes this machine ready for the course: Jupyter (Debian packages),
# GoNB and goimports built from go.mod into bin/, gopls from tools/gopls/go.mod,
# the module cache filled for offline use, and the gonb kernel registered with
# Jupyter. It is idempotent: a second run installs nothing. make lab, make
# test, CI and the Dockerfile all call it.
#
#   scripts/setup.sh            everything
#   scripts/setup.sh --no-apt   never call apt-get; only report what is missing
#   scripts/setup.sh --apt-only only the Debian packages (the Dockerfile's root step)
#
# On macOS (uname -s is Darwin) Homebrew installs what is missing (go,
# jupyterlab); without Homebrew, JupyterLab goes into a venv of its own,
# bin/jupyter-venv (python3 -m venv, pip install jupyterlab), which make
# finds; bubblewrap is skipped (the grader's sandbox is Linux's). Tested with
# fake uname, brew and python3 by scripts/setup-macos-test.sh (make cross).
#
# Environment: JUPYTER_DATA_DIR chooses where the kernel is registered
# (default ~/.local/share/jupyter, ~/Library/Jupyter on macOS; the
# Dockerfile uses a system-wide one);
# GOPLS_GOMODCACHE where gopls's own modules are fetched to build it (default
# Go's module cache; the Dockerfile keeps them out of the image, where
# notebooks need only the course's modules).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
use_apt=1 apt_only=0
[ "${1:-}" = --no-apt ] && use_apt=0
[ "${1:-}" = --apt-only ] && apt_only=1
os=$(uname -s)

say() { printf 'setup: %s\n' "$*"; }
# with_progress WHAT COMMAND...: runs COMMAND, saying every 20 s that it is
# still at WHAT, so that a long first build is never a silent minute.
with_progress() {
	local what=$1 start=$SECONDS pid
	shift
	"$@" &
	pid=$!
	while ! wait_for "$pid" 20; do
		say "  ... still $what ($((SECONDS - start)) s)"
	done
	wait "$pid"
}
wait_for() { # wait_for PID SECONDS: 0 once PID has ended, 1 after SECONDS
	local i
	for ((i = 0; i < $2 * 5; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.2
	done
	return 1
}
die() {
	printf 'setup: %s\n' "$*" >&2
	exit 1
}

# --- Go -------------------------------------------------------------------
if [ "$os" = Darwin ] && ! command -v go >/dev/null 2>&1 && command -v brew >/dev/null 2>&1; then
	say "go: installing with Homebrew (brew install go)"
	brew install go >/dev/null || die "brew install go failed (above)"
fi
command -v go >/dev/null 2>&1 || die "go not found on PATH. Install Go 1.26 or later (https://go.dev/dl) and add /usr/local/go/bin to PATH."
go_minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
[ "${go_minor:-0}" -ge 26 ] || die "Go $(go env GOVERSION) is too old; the course needs Go 1.26 or later (https://go.dev/dl)."

# --- Jupyter from Debian's packages ----------------------------------------
# JupyterLab where the release packages it (Debian 13 trixie: jupyterlab 4),
# else the classic Notebook (Debian 12 bookworm has no jupyterlab package);
# `make lab` serves whichever is installed.
jupyter_common="jupyter-nbconvert python3-nbclient python3-ipykernel jupyter-client"
jupyter_ok() {
	{ command -v jupyter-lab >/dev/null 2>&1 || command -v jupyter-notebook >/dev/null 2>&1; } &&
		command -v jupyter-nbconvert >/dev/null 2>&1 &&
		/usr/bin/python3 -c 'import nbclient, ipykernel, jupyter_client' >/dev/null 2>&1
}
# macOS: JupyterLab from Homebrew, or, without Homebrew, from PyPI into
# bin/jupyter-venv (which the Makefile appends to PATH).
venv=$here/bin/jupyter-venv
mac_jupyter_ok() { command -v jupyter-lab >/dev/null 2>&1 && command -v jupyter-nbconvert >/dev/null 2>&1; }
mac_jupyter() {
	PATH=$PATH:$venv/bin
	if mac_jupyter_ok; then
		say "jupyter: present (JupyterLab)"
		return
	fi
	if [ "$use_apt" = 0 ]; then
		die "Jupyter is missing: brew install jupyterlab (or, without Homebrew: python3 -m venv bin/jupyter-venv && bin/jupyter-venv/bin/pip install jupyterlab), then run this again."
	elif command -v brew >/dev/null 2>&1; then
		say "jupyter: installing JupyterLab with Homebrew (brew install jupyterlab)"
		brew install jupyterlab >/dev/null || die "brew install jupyterlab failed (above)"
	elif command -v python3 >/dev/null 2>&1; then
		say "jupyter: no Homebrew; installing JupyterLab into bin/jupyter-venv (python3 -m venv, pip install jupyterlab)"
		python3 -m venv "$venv" || die "python3 -m venv $venv failed (above)"
		"$venv/bin/pip" install --quiet jupyterlab || die "pip install jupyterlab failed (above); check the network, then rerun."
	else
		die "Jupyter is missing, and this Mac has neither Homebrew (https://brew.sh) nor python3: install Homebrew, then run this again."
	fi
	mac_jupyter_ok || die "JupyterLab was installed but jupyter-lab or jupyter-nbconvert is still not on PATH."
}
if [ "$os" = Darwin ]; then
	mac_jupyter
elif jupyter_ok; then
	say "jupyter: present ($(command -v jupyter-lab >/dev/null 2>&1 && echo JupyterLab || echo "the classic Notebook"))"
else
	if [ "$use_apt" = 1 ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq || die "apt-get update failed; check the network or the apt sources, then rerun."
		if [ -n "$(apt-cache policy jupyterlab 2>/dev/null | sed -n 's/^ *Candidate: *//p' | grep -v '(none)')" ]; then
			apt_packages="jupyterlab $jupyter_common"
		else
			apt_packages="jupyter-notebook $jupyter_common"
		fi
		say "jupyter: installing $apt_packages"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $apt_packages >/dev/null ||
			die "apt-get install failed for: $apt_packages"
		jupyter_ok || die "Jupyter packages installed but jupyter-lab/jupyter-notebook/nbconvert still not usable."
	else
		# One command, for this machine: JupyterLab where its release packages
		# it (Debian 13, Ubuntu 24.04), else the classic Notebook.
		front=jupyter-notebook
		if command -v apt-cache >/dev/null 2>&1 &&
			[ -n "$(apt-cache policy jupyterlab 2>/dev/null | sed -n 's/^ *Candidate: *//p' | grep -v '(none)')" ]; then
			front=jupyterlab
		elif [ -r /etc/os-release ] && grep -qE '^VERSION_CODENAME=(trixie|forky|noble|oracular|plucky)' /etc/os-release; then
			front=jupyterlab
		fi
		if command -v apt-get >/dev/null 2>&1; then
			die "Jupyter is missing. Install it with root's rights, then run this again (everything else installs without root):
    sudo apt-get update && sudo apt-get install -y $front $jupyter_common"
		fi
		die "Jupyter is missing, and this machine has no apt-get: install JupyterLab (or the Notebook), nbconvert, nbclient and ipykernel with your system's packages, then run this again."
	fi
fi

# --- bubblewrap, the grader's sandbox (grader/README.md); optional ----------
if [ "$os" = Darwin ]; then
	say "bubblewrap: skipped on macOS (the grader's sandbox needs Linux; check runs your tests with rlimits and a timeout)"
elif command -v bwrap >/dev/null 2>&1; then
	say "bubblewrap: present"
elif [ "$use_apt" = 1 ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
	say "bubblewrap: installing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null ||
		say "bubblewrap: install failed; the grader will sandbox tests with rlimits only"
else
	say "bubblewrap: missing (sudo apt-get install bubblewrap); the grader will sandbox tests with rlimits only"
fi

# --- GoNB and goimports, built from the versions pinned in go.mod -----------
[ "$apt_only" = 1 ] && exit 0

# --- GoNB, goimports and gopls, built from pinned versions -------------------
mkdir -p bin
build_tool() { # build_tool NAME PACKAGE [MODULE_DIR [GOMODCACHE]]
	local name=$1 pkg=$2 mod=${3:-.} modcache=${4:-$(go env GOMODCACHE)}
	if [ -x "bin/$name" ] && [ "bin/$name" -nt "$mod/go.mod" ]; then
		say "$name: present"
		return
	fi
	say "$name: building $pkg (pinned in $mod/go.mod; $why; ${took:-about a minute} the first time)"
	local tmp
	tmp=$(mktemp -d)
	# Build into a temporary folder so a failed build leaves no half binary.
	with_progress "building $name" env GOMODCACHE="$modcache" go build -C "$mod" -o "$tmp/$name" "$pkg" || {
		rm -rf "$tmp"
		die "building $name failed; check that the Go module proxy is reachable (go env GOPROXY), then rerun."
	}
	mv "$tmp/$name" "bin/$name"
	rm -rf "$tmp"
}
why="the Go kernel of the notebooks" took="1 to 4 minutes" build_tool gonb github.com/janpfeifer/gonb
why="GoNB adds the imports a cell needs" took="under a minute" build_tool goimports golang.org/x/tools/cmd/goimports
# gopls (completion and hover help in GoNB) has its own module, so its many
# dependencies stay out of the course's go.mod.
why="Tab completion and help in the notebooks" took="2 to 5 minutes" build_tool gopls golang.org/x/tools/gopls tools/gopls "${GOPLS_GOMODCACHE:-}"

sha256() { # sha256 FILE: its SHA-256 first, as sha256sum prints it (macOS has shasum)
	if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1"; else shasum -a 256 "$1"; fi
}
# --- the module cache: everything a notebook compiles, so that Jupyter works
# with the network off once setup has run. Nothing is fetched when all of it
# is already in the cache.
if ! out=$(go mod download 2>&1); then
	die "could not fetch the course's Go modules (go env GOPROXY: $(go env GOPROXY)):
$out"
fi
say "modules: in the cache ($(go env GOMODCACHE))"
# Each notebook is a scratch module whose go.sum GoNB fills with `go get`,
# and Go checks new go.sum lines against the checksum database. A scratch
# module made here, like GoNB's, leaves those answers in the module cache,
# so notebooks need no network later. (The image sets GOSUMDB=off instead.)
sumdb_dir=$(go env GOMODCACHE)/cache/download/sumdb
if [ "$(go env GOSUMDB)" != off ] && [ -d gpukit ] && [ ! -f "$sumdb_dir/.gpumem-$(sha256 go.sum | cut -c1-16)" ]; then
	scratch=$(mktemp -d)
	go list -f '{{if ne .Name "main"}}import _ "{{.ImportPath}}"{{end}}' ./gpukit/... |
		{ echo 'package main'; cat; echo 'func main() {}'; } >"$scratch/main.go"
	if ! out=$(cd "$scratch" && go mod init gpumem-warm >/dev/null 2>&1 &&
		go mod edit -require=github.com/gpumem/course@v0.0.0-00010101000000-000000000000 -replace=github.com/gpumem/course="$here" &&
		go get 2>&1); then
		rm -rf "$scratch"
		die "could not check the modules' checksums (go env GOSUMDB: $(go env GOSUMDB)):
$out"
	fi
	rm -rf "$scratch"
	mkdir -p "$sumdb_dir" && touch "$sumdb_dir/.gpumem-$(sha256 go.sum | cut -c1-16)"
	say "checksums: cached for offline notebooks"
fi

# --- the build cache: gpukit and the grader compiled once here, so that a
# lesson's first cell and the first `grader check` cost what later ones do
# (once, each paid a silent minute or more for this).
if [ -d gpukit ]; then
	warm_start=$SECONDS
	say "build cache: compiling gpukit and the grader for the notebooks and checks (1 to 3 minutes the first time, seconds after)"
	if with_progress "compiling gpukit and the grader" go build ./gpukit/... ./grader/cmd/grader; then
		say "build cache: ready ($((SECONDS - warm_start)) s)"
	else
		say "build cache: compiling failed (above); the notebooks will compile what they need themselves"
	fi
	# grader check builds an exercise's tests as grading does (no cgo,
	# -trimpath, and as root in the grader's own cache): other cache keys
	# than the build above. A check of every exercise warms those too (it
	# only reads the exercises; its results, the stubs', are not shown).
	# Each exercise needs its own packages: after a check of 01 alone, the
	# first check of 06-find-the-peak still took 22 s.
	if [ -d grader ] && [ -d exercises ]; then
		warm_start=$SECONDS
		say "build cache: grader check --all, so that your first check of each exercise takes seconds (about a minute the first time)"
		with_progress "warming grader check" sh -c 'go run ./grader/cmd/grader check --all >/dev/null 2>&1' || true
		say "build cache: grader check ready ($((SECONDS - warm_start)) s)"
	fi
fi

# --- register the gonb kernel ---------------------------------------------
data_dir=${JUPYTER_DATA_DIR:-$HOME/.local/share/jupyter}
python=/usr/bin/python3
if [ "$os" = Darwin ]; then
	# The user's Jupyter data folder on macOS, and the Python that runs
	# Jupyter (macOS's /usr/bin/python3 may be only the Xcode installer).
	data_dir=${JUPYTER_DATA_DIR:-$HOME/Library/Jupyter}
	if [ -x "$venv/bin/python3" ]; then
		python=$venv/bin/python3
	elif command -v brew >/dev/null 2>&1 && [ -x "$(brew --prefix jupyterlab 2>/dev/null)/libexec/bin/python" ]; then
		python=$(brew --prefix jupyterlab)/libexec/bin/python
	else
		python=python3
	fi
fi
kernel_json=$data_dir/kernels/gonb/kernel.json
gonb_path=$here/bin/gonb
# (KERNEL_GO_DIR: where the notebooks' go is, when it is not the go that
# builds here: the Dockerfile compiles with the build machine's Go.)
kernel_path="$here/bin:${KERNEL_GO_DIR:-$(dirname "$(command -v go)")}:/usr/local/bin:/usr/bin:/bin"
if [ -f "$kernel_json" ] && grep -qF "\"$gonb_path\"" "$kernel_json" && grep -qF "$kernel_path" "$kernel_json" &&
	[ "$kernel_json" -nt bin/gonb ]; then
	say "gonb kernel: present ($kernel_json)"
else
	JUPYTER_DATA_DIR=$data_dir PATH="$here/bin:$PATH" bin/gonb --install --force_deps --logtostderr >/dev/null 2>&1 ||
		die "registering the gonb kernel failed: run 'bin/gonb --install --force_deps' to see why."
	# GoNB writes an empty environment; give the kernel a PATH that finds go
	# and goimports even when Jupyter was started from a desktop launcher.
	"$python" - "$kernel_json" "$kernel_path" <<'PY'
import json, sys
path, kernel_path = sys.argv[1], sys.argv[2]
with open(path) as f:
    spec = json.load(f)
spec.setdefault("env", {})["PATH"] = kernel_path
with open(path, "w") as f:
    json.dump(spec, f, indent=1)
PY
	say "gonb kernel: registered ($kernel_json)"
fi
say "ready"
