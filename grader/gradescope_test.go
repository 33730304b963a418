package grader

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/golden files")

// TestGradescopeGolden grades a submission with only sum.go written and
// compares its results.json (times zeroed) with the golden file, which
// must follow Gradescope's documented format.
func TestGradescopeGolden(t *testing.T) {
	t.Parallel()
	c := fixtureCourse(t)
	g, _ := newGrader(t, c, SandboxAuto)
	ex, err := c.Exercise("01-toy")
	require.NoError(t, err)
	sub := t.TempDir()
	data, err := os.ReadFile(filepath.Join(c.Root, "solutions", "01-toy", "sum.go"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(sub, "nested"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "nested", "sum.go"), data, 0o644))
	res, err := g.Grade(context.Background(), ex, sub)
	require.NoError(t, err)
	gs := res.Gradescope()
	gs.ExecutionTime = 0
	var got bytes.Buffer
	require.NoError(t, WriteJSON(&got, gs))
	golden := filepath.Join("testdata", "golden", "results.json")
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
		require.NoError(t, os.WriteFile(golden, got.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), got.String())
	require.NoError(t, checkGradescopeSchema(want))
	total := 0.0
	for _, tr := range gs.Tests {
		total += tr.Score
	}
	assert.Equal(t, total, gs.Score, "the score is the tests' total")
}

func TestGradescopeSchemaRefuses(t *testing.T) {
	for _, bad := range []string{
		`{"tests": [{"name": "a", "max_score": 1}]}`,
		`{"score": "3"}`,
		`{"score": 1, "visibility": "sometimes"}`,
		`{"score": 1, "tests": [{"score": 2, "max_score": 1}]}`,
		`{"score": 1, "tests": [{"score": 1, "status": "ok"}]}`,
		`{"score": 1, "grade": 1}`,
	} {
		assert.Error(t, checkGradescopeSchema([]byte(bad)), bad)
	}
	assert.NoError(t, checkGradescopeSchema([]byte(`{"score": 44.0, "execution_time": 136, "output": "x", "visibility": "after_due_date", "stdout_visibility": "visible", "extra_data": {}, "tests": [{"score": 2.0, "max_score": 2.0, "status": "passed", "name": "n", "number": "1.1", "output": "o", "tags": ["a"], "visibility": "visible", "extra_data": {}}], "leaderboard": [{"name": "Accuracy", "value": 0.9}]}`)))
}

// checkGradescopeSchema checks a results.json against the format of
// https://gradescope-autograders.readthedocs.io/en/latest/specs/: the
// documented keys only, with their types and values; a score at the top or
// on every test; each test's score within its max_score.
func checkGradescopeSchema(data []byte) error {
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		return err
	}
	visibility := []string{"hidden", "after_due_date", "after_published", "visible"}
	formats := []string{"text", "simple_format", "html", "md", "ansi"}
	topKeys := map[string]string{"score": "number", "execution_time": "number", "output": "string",
		"output_format": "format", "test_output_format": "format", "test_name_format": "format",
		"visibility": "visibility", "stdout_visibility": "visibility", "extra_data": "object",
		"tests": "array", "leaderboard": "array"}
	testKeys := map[string]string{"score": "number", "max_score": "number", "status": "status", "name": "string",
		"name_format": "format", "number": "string", "output": "string", "output_format": "format",
		"tags": "array", "visibility": "visibility", "extra_data": "object"}
	check := func(where string, obj map[string]any, keys map[string]string) error {
		for k, v := range obj {
			kind, ok := keys[k]
			if !ok {
				return fmt.Errorf("%s: key %q is not in Gradescope's format", where, k)
			}
			var good bool
			switch kind {
			case "number":
				_, good = v.(float64)
			case "string":
				_, good = v.(string)
			case "object":
				_, good = v.(map[string]any)
			case "array":
				_, good = v.([]any)
			case "format":
				s, _ := v.(string)
				good = contains(formats, s)
			case "visibility":
				s, _ := v.(string)
				good = contains(visibility, s)
			case "status":
				good = v == "passed" || v == "failed"
			}
			if !good {
				return fmt.Errorf("%s: %q = %v is not a valid %s", where, k, v, kind)
			}
		}
		return nil
	}
	if err := check("results", top, topKeys); err != nil {
		return err
	}
	tests, _ := top["tests"].([]any)
	_, topScore := top["score"]
	for i, raw := range tests {
		test, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("tests[%d] is not an object", i)
		}
		if err := check(fmt.Sprintf("tests[%d]", i), test, testKeys); err != nil {
			return err
		}
		score, has := test["score"].(float64)
		if !has && !topScore {
			return fmt.Errorf("tests[%d] has no score and the results no top-level score", i)
		}
		if max, ok := test["max_score"].(float64); ok && score > max {
			return fmt.Errorf("tests[%d]: score %v above max_score %v", i, score, max)
		}
	}
	if !topScore && len(tests) == 0 {
		return fmt.Errorf("results have neither a score nor tests")
	}
	return nil
}
