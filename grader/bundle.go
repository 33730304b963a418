package grader

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gpumem/course/internal/atomicfile"
)

// BundleOptions configure Bundle.
type BundleOptions struct {
	Out       string // the zip to write
	GoTarball string // optional go1.x.linux-amd64.tar.gz to carry, so setup needs no network for Go
}

// BundleInfo says what a bundle holds.
type BundleInfo struct {
	Files, Modules int
	Bytes          int64
	GoVersion      string
}

// Bundle writes a Gradescope autograder zip for ex: setup.sh and
// run_autograder at its root, under course/ the course files the grading
// needs (go.mod, go.sum, gpukit, internal, the grader, this exercise and
// its hidden tests, never the solutions), and under modcache/ a module
// download cache, so that setup builds offline but for Go itself.
func (g *Grader) Bundle(ctx context.Context, ex *Exercise, opts BundleOptions) (BundleInfo, error) {
	var info BundleInfo
	if ex.Spec == nil {
		return info, fmt.Errorf("grader: exercise %s has no hidden tests", ex.Name)
	}
	goCmd := g.builder().goCmd
	version, err := goOutput(ctx, g.Course.Root, goCmd, "env", "GOVERSION")
	if err != nil {
		return info, err
	}
	info.GoVersion = strings.TrimSpace(version)
	if opts.GoTarball != "" {
		if err := checkGoTarball(opts.GoTarball, info.GoVersion, "linux", "amd64"); err != nil {
			return info, err
		}
	}
	files, err := g.Course.courseFiles()
	if err != nil {
		return info, err
	}
	var keep []string
	for _, f := range files {
		if bundled(f, ex.Name) {
			keep = append(keep, f)
		}
	}
	modules, err := g.bundleModules(ctx, ex)
	if err != nil {
		return info, err
	}
	modcache, err := goOutput(ctx, g.Course.Root, goCmd, "env", "GOMODCACHE")
	if err != nil {
		return info, err
	}
	download := filepath.Join(strings.TrimSpace(modcache), "cache", "download")
	if err := fetchMissingModules(ctx, g.Course.Root, goCmd, download, modules); err != nil {
		return info, err
	}

	err = atomicfile.Write(opts.Out, 0o644, func(w io.Writer) error {
		zw := zip.NewWriter(w)
		add := func(name string, mode os.FileMode, data []byte) error {
			h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Now()}
			h.SetMode(mode)
			f, err := zw.CreateHeader(h)
			if err != nil {
				return err
			}
			_, err = f.Write(data)
			info.Files++
			info.Bytes += int64(len(data))
			return err
		}
		if err := add("setup.sh", 0o755, []byte(setupScript(ex.Name, info.GoVersion))); err != nil {
			return err
		}
		if err := add("run_autograder", 0o755, []byte(runScript(ex.Name))); err != nil {
			return err
		}
		for _, f := range keep {
			path := filepath.Join(g.Course.Root, filepath.FromSlash(f))
			st, err := os.Stat(path)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if err := add("course/"+f, st.Mode().Perm(), data); err != nil {
				return err
			}
		}
		for _, m := range modules {
			base, needed := m.cacheFiles(download)
			for _, ext := range append(needed, ".info") {
				data, err := os.ReadFile(base + ext)
				if err != nil {
					if ext == ".info" {
						continue
					}
					return fmt.Errorf("grader: module %s@%s is not in the module cache (%v); run go mod download %s@%s", m.path, m.version, err, m.path, m.version)
				}
				if err := add("modcache/"+m.escaped+"/@v/"+m.version+ext, 0o644, data); err != nil {
					return err
				}
			}
			if m.zip {
				info.Modules++
			}
		}
		if opts.GoTarball != "" {
			data, err := os.ReadFile(opts.GoTarball)
			if err != nil {
				return err
			}
			if err := add("go.tar.gz", 0o644, data); err != nil {
				return err
			}
		}
		return zw.Close()
	})
	if err != nil {
		return info, fmt.Errorf("grader: writing %s: %w", opts.Out, err)
	}
	return info, nil
}

// bundled reports whether the course file rel goes into the bundle of
// exercise name.
func bundled(rel, name string) bool {
	switch {
	case rel == "go.mod", rel == "go.sum":
		return true
	case strings.HasPrefix(rel, "gpukit/"), strings.HasPrefix(rel, "internal/"):
		return true
	case strings.HasPrefix(rel, "exercises/"+name+"/"), strings.HasPrefix(rel, "grader/hidden/"+name+"/"):
		return true
	case strings.HasPrefix(rel, "grader/hidden/"), strings.HasPrefix(rel, "grader/testdata/"):
		return false
	case strings.HasPrefix(rel, "grader/"):
		return true
	}
	return false
}

type bundleModule struct {
	path, escaped, version string
	zip                    bool // its packages are compiled, not only its go.mod read
}

// cacheFiles are the module's files in the module cache's download folder
// that the bundle needs (path without its extension, and the extensions).
// The .info file is carried too when present; the go command can do
// without it.
func (m bundleModule) cacheFiles(download string) (base string, needed []string) {
	needed = []string{".mod"}
	if m.zip {
		needed = append(needed, ".zip", ".ziphash")
	}
	return filepath.Join(download, m.escaped, "@v", m.version), needed
}

// bundleModules lists the modules that setup needs: the zips of those whose
// packages the grader and the exercise's tests compile, and the go.mod of
// every module version go.sum names (the module graph).
func (g *Grader) bundleModules(ctx context.Context, ex *Exercise) ([]bundleModule, error) {
	pkgs := []string{"./grader/cmd/grader", "./exercises/" + ex.Name}
	hidden, err := goFiles(ex.HiddenDir, true)
	if err != nil {
		return nil, err
	}
	for _, f := range hidden {
		parsed, err := parser.ParseFile(token.NewFileSet(), filepath.Join(ex.HiddenDir, f), nil, parser.ImportsOnly)
		if err != nil {
			return nil, fmt.Errorf("grader: %w", err)
		}
		for _, imp := range parsed.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			pkgs = append(pkgs, p)
		}
	}
	args := append([]string{"list", "-deps", "-test", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}"}, pkgs...)
	out, err := goOutput(ctx, g.Course.Root, g.builder().goCmd, args...)
	if err != nil {
		return nil, err
	}
	zips := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			zips[f[0]+"@"+f[1]] = true
		}
	}
	sum, err := os.ReadFile(filepath.Join(g.Course.Root, "go.sum"))
	if err != nil {
		return nil, fmt.Errorf("grader: %w", err)
	}
	seen := map[string]bool{}
	var mods []bundleModule
	sc := bufio.NewScanner(bytes.NewReader(sum))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		version := strings.TrimSuffix(f[1], "/go.mod")
		key := f[0] + "@" + version
		if seen[key] {
			continue
		}
		seen[key] = true
		esc, err := escapeModulePath(f[0])
		if err != nil {
			return nil, err
		}
		mods = append(mods, bundleModule{path: f[0], escaped: esc, version: version, zip: zips[key]})
	}
	for key := range zips {
		if !seen[key] {
			return nil, fmt.Errorf("grader: module %s is compiled but not in go.sum; run go mod tidy", key)
		}
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].path+mods[i].version < mods[j].path+mods[j].version })
	return mods, nil
}

// fetchMissingModules downloads the module files the bundle needs that the
// module cache lacks. Plain "go mod download" fetches what the course's own
// packages build with, not every go.mod that go.sum names, so a machine
// that only ran setup can lack a few.
func fetchMissingModules(ctx context.Context, root, goCmd, download string, modules []bundleModule) error {
	var missing []string
	for _, m := range modules {
		base, needed := m.cacheFiles(download)
		for _, ext := range needed {
			if _, err := os.Stat(base + ext); err != nil {
				missing = append(missing, m.path+"@"+m.version)
				break
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := goOutput(ctx, root, goCmd, append([]string{"mod", "download"}, missing...)...); err != nil {
		return fmt.Errorf("grader: the bundle needs %d module(s) that are not in the module cache (%s), and downloading them failed; connect to the module proxy once and retry: %w",
			len(missing), strings.Join(missing, ", "), err)
	}
	return nil
}

// escapeModulePath is the module cache's case encoding: each upper-case
// letter becomes '!' and its lower case.
func escapeModulePath(path string) (string, error) {
	var b strings.Builder
	for _, r := range path {
		if r == '!' || r >= unicode.MaxASCII {
			return "", fmt.Errorf("grader: module path %q cannot be escaped", path)
		}
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String(), nil
}

func goOutput(ctx context.Context, dir, goCmd string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("grader: go %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// checkGoTarball returns an error unless path is a gzip'd tar of a Go
// distribution of version (go/VERSION's first line) for goos/goarch (its
// go/pkg/tool/GOOS_GOARCH folder), as go.dev/dl publishes them.
func checkGoTarball(path, version, goos, goarch string) error {
	bad := func(why string, args ...any) error {
		return fmt.Errorf("grader: --go-tarball %s: %s; give %s.%s-%s.tar.gz from https://go.dev/dl/", path, fmt.Sprintf(why, args...), version, goos, goarch)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("grader: --go-tarball: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return bad("not gzip'd (%v)", err)
	}
	tr := tar.NewReader(zr)
	found, tools := "", false
	toolDir := "go/pkg/tool/" + goos + "_" + goarch + "/"
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return bad("not a tar archive (%v)", err)
		}
		switch {
		case h.Name == "go/VERSION":
			data, err := io.ReadAll(io.LimitReader(tr, 4096))
			if err != nil {
				return bad("reading go/VERSION: %v", err)
			}
			found, _, _ = strings.Cut(string(data), "\n")
			found = strings.TrimSpace(found)
		case strings.HasPrefix(h.Name, toolDir):
			tools = true
		}
		if found != "" && tools {
			break
		}
	}
	switch {
	case found == "":
		return bad("no go/VERSION: not a Go distribution")
	case found != version:
		return bad("it is %s, and the bundle is made with %s", found, version)
	case !tools:
		return bad("it is not for %s/%s (no %s)", goos, goarch, strings.TrimSuffix(toolDir, "/"))
	}
	return nil
}

func setupScript(exercise, goVersion string) string {
	return strings.NewReplacer("@EXERCISE@", exercise, "@GOVERSION@", goVersion).Replace(`#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image
# for exercise @EXERCISE@. Written by grader bundle.
set -euo pipefail
root=${AUTOGRADER_ROOT:-/autograder}
src=$(cd "$(dirname "$0")" && pwd)
course=$src/course
go_version=@GOVERSION@
say() { printf 'setup: %s\n' "$*"; }

if [ -z "${SKIP_APT:-}" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	say "installing bubblewrap, prlimit (util-linux), curl"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap util-linux ca-certificates curl python3 >/dev/null ||
		say "could not install bubblewrap; grading will use rlimits and a separate uid only"
fi

# Go: the version the bundle was made with, from the bundle or from go.dev.
export PATH=/usr/local/go/bin:$PATH
if [ "$(go env GOVERSION 2>/dev/null || true)" != "$go_version" ]; then
	tarball=$src/go.tar.gz
	if [ ! -f "$tarball" ]; then
		arch=$(uname -m); case $arch in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; esac
		file=$go_version.linux-$arch.tar.gz
		tarball=$(mktemp -d)/$file
		say "downloading $file"
		curl -fsSL -o "$tarball" "https://go.dev/dl/$file"
		want=$(curl -fsSL 'https://go.dev/dl/?mode=json&include=all' | python3 -c '
import json, sys
name = sys.argv[1]
for release in json.load(sys.stdin):
    for f in release["files"]:
        if f["filename"] == name:
            print(f["sha256"])
' "$file")
		got=$(sha256sum "$tarball" | cut -d' ' -f1)
		[ -n "$want" ] && [ "$want" = "$got" ] || { say "checksum of $file does not match go.dev's ($got, want $want)"; exit 1; }
	fi
	rm -rf /usr/local/go && tar -C /usr/local -xzf "$tarball"
fi
say "$(go version)"

# Everything else builds offline, from the bundle's module cache.
export GOFLAGS=-mod=mod GOPROXY=file://$src/modcache GOSUMDB=off GOTOOLCHAIN=local
export GOMODCACHE=$root/gomodcache GOCACHE=$root/gocache
(cd "$course" && go build -o "$root/grader" ./grader/cmd/grader)
# Grading the stub checks the install and warms the build cache, so that a
# submission is graded with a warm cache.
"$root/grader" grade --course "$course" --exercise @EXERCISE@ --submission "$course/exercises/@EXERCISE@" --format text
# Tests run as other uids: where bubblewrap cannot hide the hidden tests and
# the build cache, their permissions do.
chmod 700 "$src" "$root/gocache"
say "ready"
`)
}

func runScript(exercise string) string {
	return strings.ReplaceAll(`#!/usr/bin/env bash
# Gradescope runs this for every submission of exercise @EXERCISE@.
# Written by grader bundle.
root=${AUTOGRADER_ROOT:-/autograder}
export PATH=/usr/local/go/bin:$PATH GOMODCACHE=$root/gomodcache GOCACHE=$root/gocache GOTOOLCHAIN=local
export GOPROXY=file://$root/source/modcache GOSUMDB=off
mkdir -p "$root/results"
results=$root/results/results.json
if ! "$root/grader" grade --course "$root/source/course" --exercise @EXERCISE@ --submission "$root/submission" \
	--format gradescope --out "$results"; then
	if [ ! -s "$results" ]; then
		printf '%s\n' '{"score": 0, "output": "The autograder itself failed; your submission was not graded. Tell your instructor.", "tests": []}' >"$results"
	fi
fi
exit 0
`, "@EXERCISE@", exercise)
}
