package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func notebookJSON(t *testing.T, cells ...string) []byte {
	t.Helper()
	var nb notebook
	for _, c := range cells {
		kind := "code"
		if strings.HasPrefix(c, "# ") {
			kind = "markdown"
		}
		nb.Cells = append(nb.Cells, struct {
			Type   string   `json:"cell_type"`
			Source []string `json:"source"`
		}{kind, strings.SplitAfter(c, "\n")})
	}
	b, err := json.Marshal(nb)
	require.NoError(t, err)
	return b
}

func TestParse(t *testing.T) {
	tests := []struct {
		name      string
		cells     []string
		wantDecls []string
		wantCells []string
		wantErr   string
	}{
		{
			name:      "shell lines, prose and empty cells are left out",
			cells:     []string{"!*go mod edit -replace=x=y && go get x/...\n%noautoget\n%goflags -ldflags=-w", "# Title\n\nprose", "", "!cd .. && go run ./grader/cmd/grader check x"},
			wantDecls: nil, wantCells: nil,
		},
		{
			name:      "declarations and a main body",
			cells:     []string{"import \"fmt\"\n\nconst MiB = 1 << 20", "%%\nfmt.Println(MiB)"},
			wantDecls: []string{"import \"fmt\"\n\nconst MiB = 1 << 20"},
			wantCells: []string{"fmt.Println(MiB)"},
		},
		{
			name:      "declarations before %% in the same cell",
			cells:     []string{"func twice(x int) int { return 2 * x }\n\n%%\nfmt.Println(twice(2))\n"},
			wantDecls: []string{"func twice(x int) int { return 2 * x }"},
			wantCells: []string{"fmt.Println(twice(2))"},
		},
		{
			name:    "another magic is refused",
			cells:   []string{"%with_inputs\nfmt.Println(1)"},
			wantErr: "a GoNB magic other than %% is not supported",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := parse("03", notebookJSON(t, tc.cells...))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "l03", l.pkg)
			assert.Equal(t, tc.wantDecls, l.decls)
			assert.Equal(t, tc.wantCells, l.cells)
		})
	}
}

func TestFiles(t *testing.T) {
	l := lesson{pkg: "l02", num: "02", decls: []string{"const MiB = 1 << 20"}, cells: []string{"fmt.Println(MiB)", "return"}}
	f := l.files()
	assert.Len(t, f, 4)
	assert.Contains(t, f["decl00.go"], "package l02\n\nconst MiB = 1 << 20\n")
	assert.Contains(t, f["cell01.go"], "func cell01() {\nreturn\n}\n")
	assert.Contains(t, f["cells.go"], "var Cells = []func(){\n\tcell00,\n\tcell01,\n}\n")
	main := mainSource("github.com/gpumem/course/bin/x", []lesson{l})
	assert.Contains(t, main, "\t\"github.com/gpumem/course/bin/x/l02\"\n")
	assert.Contains(t, main, "\t\"02\": l02.Cells,\n")
}

// TestTheNotebooksBuildAndRun generates the program from this repository's
// notebooks, builds it and runs its first cell on sim: what gpu-bundle.sh
// carries to a GPU machine.
func TestTheNotebooksBuildAndRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the notebooks (-short)")
	}
	root, err := moduleRoot()
	require.NoError(t, err)
	out := filepath.Join(root, "bin", fmt.Sprintf("_lessonprog-test.%d", os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(out) })
	require.NoError(t, run(filepath.Join(root, "notebooks"), out))
	exe := filepath.Join(t.TempDir(), "lessons")
	build := exec.Command("go", "build", "-o", exe, ".")
	build.Dir = out
	msg, err := build.CombinedOutput()
	require.NoError(t, err, "%s", msg)

	list, err := exec.Command(exe, "-list").Output()
	require.NoError(t, err)
	cells := strings.Fields(string(list))
	assert.Greater(t, len(cells), 50)
	assert.Contains(t, cells, "02:0")

	stats := filepath.Join(t.TempDir(), "stats.json")
	cmd := exec.Command(exe, "-run", "02:0", "-stats", stats)
	cmd.Dir = filepath.Join(root, "notebooks")
	cmd.Env = append(os.Environ(), "GPUKIT_DEVICE=sim:0", "GPUKIT_PROFILE=classroom")
	outp, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", outp)
	assert.Contains(t, string(outp), "two blocks                   allocated     7.63 MiB   reserved    20.00 MiB")
	var s struct {
		Device string           `json:"device"`
		Stats  map[string]int64 `json:"stats"`
	}
	b, err := os.ReadFile(stats)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &s))
	assert.Equal(t, "sim:0", s.Device)
	assert.Equal(t, int64(20<<20), s.Stats["reserved_bytes.all.current"], "lesson 02: both freed, 20 MiB stay reserved")

	bad := exec.Command(exe, "-run", "99:0")
	assert.Error(t, bad.Run(), "an unknown cell exits non-zero")
}
