#!/usr/bin/env bash
# scripts/setup.sh's macOS branch, on Linux, with fakes: uname says Darwin,
# brew and python3 are scripts that log their calls and lay down fake
# jupyter-lab and jupyter-nbconvert, gonb writes a kernel.json, and PATH
# holds only these and a few coreutils (no apt-get, no system Jupyter). The
# real go runs, on a one-line module (nothing to download). Four cases:
#
#   1. Homebrew: brew install jupyterlab, bubblewrap skipped in one line, the
#      gonb kernel in ~/Library/Jupyter with its PATH, "ready";
#   2. the same again: nothing installed, everything "present";
#   3. no Homebrew: python3 -m venv bin/jupyter-venv, pip install jupyterlab;
#   4. neither: setup stops with a message that names Homebrew.
#
# About a second; no network. make cross runs it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
go=$(command -v "${GO:-go}") || { echo "setup-macos-test: go not found"; exit 1; }
# The real interpreter (not a shim such as pyenv's, which needs its PATH).
python=$(python3 -c 'import sys; print(sys.executable)') || { echo "setup-macos-test: python3 not found"; exit 1; }
t=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$t"' EXIT
fails=0
ok() { echo "setup-macos-test: ok: $*"; }
bad() {
	echo "setup-macos-test: FAIL: $*"
	fails=$((fails + 1))
}

# A course with setup.sh and nothing to build: GoNB, goimports and gopls
# already in bin/, newer than go.mod.
repo=$t/repo
mkdir -p "$repo/scripts" "$repo/bin" "$repo/tools/gopls"
cp "$here/scripts/setup.sh" "$repo/scripts/"
printf 'module example.com/fake\n\ngo 1.26\n' >"$repo/go.mod"
printf 'module example.com/fakegopls\n\ngo 1.26\n' >"$repo/tools/gopls/go.mod"
cat >"$repo/bin/gonb" <<'EOF'
#!/bin/sh
# fake GoNB: --install writes the kernel spec as GoNB does (an empty env)
[ "$1" = --install ] || exit 1
dir=$JUPYTER_DATA_DIR/kernels/gonb
mkdir -p "$dir"
printf '{"argv": ["%s", "--kernel", "{connection_file}"], "display_name": "Go (gonb)", "language": "go", "env": {}}\n' "$(cd "$(dirname "$0")" && pwd)/gonb" >"$dir/kernel.json"
EOF
for tool in goimports gopls; do printf '#!/bin/sh\n' >"$repo/bin/$tool"; done
chmod +x "$repo/bin/"*
touch -d '-1 hour' "$repo/go.mod" "$repo/tools/gopls/go.mod"

# PATH: the fakes, then only the tools setup.sh uses.
sys=$t/sys
mkdir -p "$sys"
for tool in bash sh env sed grep head cat mkdir rm mv cp chmod touch mktemp dirname basename sleep cut id tr ls ln sha256sum; do
	ln -s "$(command -v "$tool")" "$sys/$tool"
done
ln -s "$go" "$sys/go"
fake=$t/fake
mkdir -p "$fake"
cat >"$fake/uname" <<'EOF'
#!/bin/sh
case "$1" in -m) echo arm64 ;; *) echo Darwin ;; esac
EOF
cat >"$fake/apt-get" <<EOF
#!/bin/sh
echo "apt-get \$*" >>"$t/calls"
exit 1
EOF
# jupyter_tools DIR: fake jupyter, jupyter-lab and jupyter-nbconvert in DIR
cat >"$t/jupyter_tools" <<'EOF'
#!/bin/sh
mkdir -p "$1"
for tool in jupyter jupyter-lab jupyter-nbconvert; do printf '#!/bin/sh\necho 4.0.0\n' >"$1/$tool"; chmod +x "$1/$tool"; done
EOF
chmod +x "$fake/"* "$t/jupyter_tools"
mkdir -p "$t/brew-home/bin" "$t/brew-home/opt/jupyterlab/libexec/bin"
ln -s "$python" "$t/brew-home/opt/jupyterlab/libexec/bin/python"
brewbin=$t/brewbin # brew and what it installed
mkdir -p "$brewbin"
cat >"$brewbin/brew" <<EOF
#!/bin/sh
echo "brew \$*" >>"$t/calls"
case "\$1 \$2" in
"install jupyterlab") "$t/jupyter_tools" "$t/brew-home/bin" ;;
"--prefix jupyterlab") echo "$t/brew-home/opt/jupyterlab" ;;
*) exit 1 ;;
esac
EOF
pybin=$t/pybin # a python3 whose venv's pip installs the fake Jupyter
mkdir -p "$pybin"
cat >"$pybin/python3" <<EOF
#!/bin/sh
echo "python3 \$*" >>"$t/calls"
[ "\$1 \$2" = "-m venv" ] || exec "$python" "\$@"
mkdir -p "\$3/bin"
ln -s "$python" "\$3/bin/python3"
printf '#!/bin/sh\necho "pip \$*" >>"$t/calls"\n[ "\$1 \$3" = "install jupyterlab" ] && "$t/jupyter_tools" "%s"\n' "\$3/bin" >"\$3/bin/pip"
chmod +x "\$3/bin/pip"
EOF
chmod +x "$brewbin/brew" "$pybin/python3"

run_setup() { # run_setup NAME PATH: setup.sh with a fresh HOME each case
	: >"$t/calls"
	HOME=$t/home-$1 PATH=$2 GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GOCACHE=$t/gocache GOMODCACHE=$t/gomodcache GOSUMDB=off \
		bash ${SETUP_X:-} "$repo/scripts/setup.sh" >"$t/$1.log" 2>&1
}
check_kernel() { # check_kernel NAME
	local spec=$t/home-$1/Library/Jupyter/kernels/gonb/kernel.json
	if [ -f "$spec" ] && grep -q "\"PATH\": \"$repo/bin:" "$spec"; then
		ok "$1: the gonb kernel is in ~/Library/Jupyter with a PATH"
	else
		bad "$1: no gonb kernel.json with a PATH in ~/Library/Jupyter ($(cat "$spec" 2>&1))"
	fi
}
expect() { # expect NAME PATTERN WHAT
	if grep -qE -- "$2" "$t/$1.log" "$t/calls"; then ok "$1: $3"; else bad "$1: $3 (no /$2/)"; fi
}
refuse() { # refuse NAME PATTERN WHAT
	if grep -qE -- "$2" "$t/$1.log" "$t/calls"; then bad "$1: $3 (/$2/ seen)"; else ok "$1: $3"; fi
}

path_brew=$fake:$brewbin:$t/brew-home/bin:$sys
if run_setup brew "$path_brew"; then ok "brew: setup succeeded"; else bad "brew: setup failed"; fi
expect brew '^setup: jupyter: installing JupyterLab with Homebrew' "says it installs JupyterLab with Homebrew"
expect brew '^brew install jupyterlab$' "ran brew install jupyterlab"
expect brew '^setup: bubblewrap: skipped on macOS' "skips bubblewrap in one line"
refuse brew '^apt-get' "never runs apt-get"
expect brew '^setup: ready$' "ends ready"
check_kernel brew
cp "$t/brew.log" "$t/brew1.log"
if run_setup brew "$path_brew"; then ok "brew, again: setup succeeded"; else bad "brew, again: setup failed"; fi
refuse brew '^brew install' "installs nothing the second time"
expect brew '^setup: jupyter: present' "finds JupyterLab present"
expect brew '^setup: gonb kernel: present' "finds the kernel present"

rm -rf "$repo/bin/jupyter-venv"
if run_setup venv "$fake:$pybin:$sys"; then ok "venv: setup succeeded"; else bad "venv: setup failed"; fi
expect venv '^setup: jupyter: no Homebrew; installing JupyterLab into bin/jupyter-venv' "says it makes a venv"
expect venv '^python3 -m venv '"$repo"'/bin/jupyter-venv$' "ran python3 -m venv bin/jupyter-venv"
expect venv '^pip install --quiet jupyterlab$' "ran pip install jupyterlab"
expect venv '^setup: ready$' "ends ready"
check_kernel venv
rm -rf "$repo/bin/jupyter-venv"

if run_setup none "$fake:$sys"; then bad "neither: setup succeeded without Jupyter"; else ok "neither: setup stops"; fi
expect none 'neither Homebrew \(https://brew.sh\) nor python3' "names Homebrew"

if [ "$fails" -gt 0 ]; then
	for log in brew1 brew venv none; do
		echo "--- $log.log"
		cat "$t/$log.log" 2>/dev/null || true
	done
	echo "setup-macos-test: $fails checks failed"
	exit 1
fi
echo "setup-macos-test: ok (setup.sh's macOS branch with fake uname, brew and python3)"
