package grader

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bundleCourse is the fixture course with the real gpukit, internal and
// grader folders, which a bundle carries.
func bundleCourse(t *testing.T) *Course {
	c := fixtureCourse(t)
	for _, dir := range []string{"gpukit", "internal", "grader"} {
		src := filepath.Join("..", dir)
		err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, path)
			if d.IsDir() {
				if dir == "grader" && (rel == "hidden" || rel == "testdata") {
					return filepath.SkipDir
				}
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			dst := filepath.Join(c.Root, dir, rel)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			return os.WriteFile(dst, data, 0o644)
		})
		require.NoError(t, err)
	}
	return c
}

func TestBundle(t *testing.T) {
	c := bundleCourse(t)
	g, _ := newGrader(t, c, SandboxLimits)
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "autograder.zip")
	info, err := g.Bundle(context.Background(), ex, BundleOptions{Out: out})
	require.NoError(t, err)
	assert.Positive(t, info.Modules)

	zr, err := zip.OpenReader(out)
	require.NoError(t, err)
	defer zr.Close()
	entries := map[string]*zip.File{}
	for _, f := range zr.File {
		entries[f.Name] = f
		assert.False(t, strings.HasPrefix(f.Name, "course/solutions/"), "a solution in the bundle: %s", f.Name)
		assert.False(t, strings.HasPrefix(f.Name, "course/grader/testdata/"), "grader test data in the bundle: %s", f.Name)
	}
	for _, name := range []string{"setup.sh", "run_autograder", "course/go.mod", "course/go.sum",
		"course/exercises/01-toy/sum.go", "course/grader/hidden/01-toy/grade.json",
		"course/grader/hidden/01-toy/hidden_test.go", "course/grader/cmd/grader/main.go",
		"modcache/github.com/stretchr/testify/@v/v1.12.1.zip", "modcache/github.com/stretchr/testify/@v/v1.12.1.mod"} {
		assert.Contains(t, entries, name)
	}
	for _, script := range []string{"setup.sh", "run_autograder"} {
		f := entries[script]
		require.NotNil(t, f)
		assert.Equal(t, os.FileMode(0o755), f.Mode().Perm(), script)
		rc, err := f.Open()
		require.NoError(t, err)
		cmd := exec.Command("bash", "-n")
		cmd.Stdin = rc
		outb, err := cmd.CombinedOutput()
		rc.Close()
		assert.NoError(t, err, "%s: %s", script, outb)
	}
}

// TestBundleOffline unpacks a bundle, runs its setup.sh with an empty
// module cache and build cache (everything builds from the bundle, with
// GOPROXY pointing into it) and its run_autograder on a submission. It
// takes minutes, so it runs only with GRADER_BUNDLE_E2E=1.
func TestBundleOffline(t *testing.T) {
	if os.Getenv("GRADER_BUNDLE_E2E") == "" {
		t.Skip("set GRADER_BUNDLE_E2E=1 to build a bundle from scratch (minutes)")
	}
	c := bundleCourse(t)
	g, _ := newGrader(t, c, SandboxLimits)
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	root := t.TempDir()
	zipPath := filepath.Join(root, "autograder.zip")
	_, err = g.Bundle(context.Background(), ex, BundleOptions{Out: zipPath})
	require.NoError(t, err)
	src := filepath.Join(root, "source")
	unzip := exec.Command("unzip", "-q", zipPath, "-d", src)
	out, err := unzip.CombinedOutput()
	require.NoError(t, err, "%s", out)
	env := append(os.Environ(), "AUTOGRADER_ROOT="+root, "SKIP_APT=1")
	setup := exec.Command("bash", filepath.Join(src, "setup.sh"))
	setup.Env = env
	out, err = setup.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("setup.sh:\n%s", out)
	require.NoError(t, os.CopyFS(filepath.Join(root, "submission"), os.DirFS(ex.SolutionDir)))
	runner := exec.Command(filepath.Join(src, "run_autograder"))
	runner.Env = env
	out, err = runner.CombinedOutput()
	require.NoError(t, err, "%s", out)
	data, err := os.ReadFile(filepath.Join(root, "results", "results.json"))
	require.NoError(t, err)
	require.NoError(t, checkGradescopeSchema(data))
	var res GradescopeResults
	require.NoError(t, json.Unmarshal(data, &res))
	assert.Equal(t, 7.0, res.Score, string(data))
}

// A module file the bundle needs but the cache lacks is downloaded; when
// that fails, the error names the module and what to do.
func TestFetchMissingModules(t *testing.T) {
	download := t.TempDir()
	present := bundleModule{path: "example.com/present", escaped: "example.com/present", version: "v1.0.0"}
	require.NoError(t, os.MkdirAll(filepath.Join(download, present.escaped, "@v"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(download, present.escaped, "@v", "v1.0.0.mod"), []byte("module example.com/present\n"), 0o644))
	absent := bundleModule{path: "example.invalid/absent", escaped: "example.invalid/absent", version: "v1.2.3", zip: true}
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOFLAGS", "-mod=mod")

	ctx := context.Background()
	require.NoError(t, fetchMissingModules(ctx, "..", "go", download, []bundleModule{present}), "nothing to fetch")
	err := fetchMissingModules(ctx, "..", "go", download, []bundleModule{present, absent})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "example.invalid/absent@v1.2.3")
	assert.Contains(t, err.Error(), "connect to the module proxy once and retry")
	assert.NotContains(t, err.Error(), "example.com/present")
}

func TestCheckGoTarball(t *testing.T) {
	dir := t.TempDir()
	tarball := func(name string, gzipped bool, files map[string]string) string {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, n := range slices.Sorted(maps.Keys(files)) {
			require.NoError(t, tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n]))}))
			_, err := tw.Write([]byte(files[n]))
			require.NoError(t, err)
		}
		require.NoError(t, tw.Close())
		data := buf.Bytes()
		if gzipped {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			zw.Write(data)
			require.NoError(t, zw.Close())
			data = z.Bytes()
		}
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o644))
		return path
	}
	good := map[string]string{"go/VERSION": "go1.26.8\ntime 2026-01-01\n", "go/pkg/tool/linux_amd64/compile": "\x7fELF"}
	for _, tc := range []struct {
		path, want string
	}{
		{tarball("good.tar.gz", true, good), ""},
		{tarball("plain.tar", false, good), "not gzip'd"},
		{tarball("other.tar.gz", true, map[string]string{"README": "hi"}), "no go/VERSION"},
		{tarball("old.tar.gz", true, map[string]string{"go/VERSION": "go1.22.0\n", "go/pkg/tool/linux_amd64/compile": ""}), "it is go1.22.0, and the bundle is made with go1.26.8"},
		{tarball("arm.tar.gz", true, map[string]string{"go/VERSION": "go1.26.8\n", "go/pkg/tool/linux_arm64/compile": ""}), "not for linux/amd64"},
		{filepath.Join(dir, "missing.tar.gz"), "no such file"},
	} {
		err := checkGoTarball(tc.path, "go1.26.8", "linux", "amd64")
		if tc.want == "" {
			assert.NoError(t, err)
		} else {
			assert.ErrorContains(t, err, tc.want)
		}
	}
}
