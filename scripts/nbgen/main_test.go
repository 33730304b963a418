package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const recipe = "```go\n" + FirstCell + "\n```\n"

func cellsOf(t *testing.T, lesson string) []map[string]any {
	t.Helper()
	out, err := convert(lesson)
	require.NoError(t, err)
	var nb struct {
		Cells []map[string]any `json:"cells"`
	}
	require.NoError(t, json.Unmarshal(out, &nb))
	return nb.Cells
}

func TestConvertSplitsProseAndGoBlocks(t *testing.T) {
	lesson := "# Title\n\nIntro.\n\n" + recipe + "\nText with a shell block:\n\n```sh\nmake lab\n```\n\n```go\n%%\nfmt.Println(1)\n```\n"
	cells := cellsOf(t, lesson)
	var kinds []string
	for _, c := range cells {
		kinds = append(kinds, c["cell_type"].(string))
	}
	assert.Equal(t, []string{"markdown", "code", "markdown", "code"}, kinds)
	assert.Equal(t, []any{"%%\n", "fmt.Println(1)"}, cells[3]["source"])
	assert.Contains(t, strings.Join(toStrings(cells[2]["source"]), ""), "```sh\nmake lab\n```", "non-Go fences stay in the prose")
	assert.Nil(t, cells[1]["execution_count"])
	assert.Equal(t, []any{}, cells[1]["outputs"])
	_, hasOutputs := cells[0]["outputs"]
	assert.False(t, hasOutputs, "markdown cells have no outputs")
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func TestConvertNamesCellsFromTheFence(t *testing.T) {
	cells := cellsOf(t, recipe+"\n```go peaks\n%%\nfmt.Println(1)\n```\n\n```go\n%%\n```\n")
	require.Len(t, cells, 3)
	assert.Equal(t, map[string]any{"name": "peaks"}, cells[1]["metadata"], "the fence's name goes to the cell's metadata")
	assert.Equal(t, []any{"%%\n", "fmt.Println(1)"}, cells[1]["source"])
	assert.Equal(t, map[string]any{}, cells[2]["metadata"], "an unnamed cell has no name")
}

func TestConvertRefusesBadLessons(t *testing.T) {
	for name, lesson := range map[string]string{
		"no recipe":      "# T\n\n```go\n%%\nfmt.Println(1)\n```\n",
		"no code at all": "# T\n\njust text\n",
		"unclosed fence": recipe + "```go\n%%\n",
		"wrong recipe":   "```go\n!*go mod edit -replace=x=y\n```\n",
		"named twice":    recipe + "```go a\n%%\n```\n```go a\n%%\n```\n",
		"bad name":       recipe + "```go a b\n%%\n```\n",
		"bad name chars": recipe + "```go a/b\n%%\n```\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := convert(lesson)
			assert.Error(t, err)
		})
	}
}

func TestRunWritesThenChecks(t *testing.T) {
	dir := t.TempDir()
	lessons, notebooks := filepath.Join(dir, "lessons"), filepath.Join(dir, "notebooks")
	require.NoError(t, os.MkdirAll(lessons, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(lessons, "01-x.md"), []byte("# X\n\n"+recipe), 0o644))

	assert.Error(t, run(lessons, notebooks, true), "a missing notebook is drift")
	require.NoError(t, run(lessons, notebooks, false))
	require.NoError(t, run(lessons, notebooks, true), "freshly generated notebooks pass the check")

	require.NoError(t, os.WriteFile(filepath.Join(notebooks, "01-x.ipynb"), []byte("{}"), 0o644))
	assert.ErrorContains(t, run(lessons, notebooks, true), "01-x.ipynb is not generated from")
	require.NoError(t, run(lessons, notebooks, false))

	require.NoError(t, os.WriteFile(filepath.Join(notebooks, "02-orphan.ipynb"), []byte("{}"), 0o644))
	assert.ErrorContains(t, run(lessons, notebooks, true), "02-orphan.ipynb has no lesson")
}

func FuzzConvert(f *testing.F) {
	f.Add("# T\n" + recipe + "```go\n%%\n```\n")
	f.Add("```\n```go\n")
	f.Add(recipe + "```text\nx\n```\n```go\ny\n```")
	f.Fuzz(func(t *testing.T, lesson string) {
		out, err := convert(lesson)
		if err != nil {
			return
		}
		var nb notebook
		if err := json.Unmarshal(out, &nb); err != nil {
			t.Fatalf("convert produced invalid JSON: %v", err)
		}
		if len(nb.Cells) == 0 {
			t.Fatal("a lesson that converts has at least the recipe cell")
		}
	})
}
