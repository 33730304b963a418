package grader

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The export data of an import list comes from go list once a grader's
// run, for every builder of the grader; a list that differs only where
// one path holds a line break is another list.
func TestExportDataCached(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the counting go command is a shell script")
	}
	t.Parallel()
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxLimits)
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$1\" >>'" + calls + "'\nexec '" + goBin + "' \"$@\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755))
	g.Go = filepath.Join(dir, "go")
	lists := func() int {
		data, err := os.ReadFile(calls)
		if os.IsNotExist(err) {
			return 0
		}
		require.NoError(t, err)
		return strings.Count(string(data), "list\n")
	}
	ctx := context.Background()

	// A student's import may hold a line break (strconv.Unquote of
	// "fmt\nstrings"): whatever go list makes of it, it is not the list
	// of fmt and strings.
	_, _ = g.builder().exportData(ctx, map[string]bool{"fmt\nstrings": true})
	first, err := g.builder().exportData(ctx, map[string]bool{"fmt": true, "strings": true})
	require.NoError(t, err)
	require.NotEmpty(t, first["fmt"], "fmt's export data")
	require.NotEmpty(t, first["strings"], "strings' export data")
	before := lists()
	again, err := g.builder().exportData(ctx, map[string]bool{"strings": true, "fmt": true})
	require.NoError(t, err)
	assert.Equal(t, first, again)
	assert.Equal(t, before, lists(), "the same list again: no go list")

	_, err = g.builder().exportData(ctx, map[string]bool{"fmt": true})
	require.NoError(t, err)
	assert.Equal(t, before+1, lists(), "another list: go list")

	// A grader of its own runs go list again.
	other, _ := newGrader(t, c, SandboxLimits)
	other.Go = g.Go
	_, err = other.builder().exportData(ctx, map[string]bool{"fmt": true, "strings": true})
	require.NoError(t, err)
	assert.Equal(t, before+2, lists())
}
