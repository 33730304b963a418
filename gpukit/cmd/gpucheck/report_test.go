package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const passingLog = `=== RUN   TestConformance
--- PASS: TestConformance (1.20s)
=== RUN   TestCopies
--- PASS: TestCopies (0.01s)
PASS
`

const modelLines = `{"i":0,"name":"parameters","ok":true,"error":null,"offset":null,"stats":{"count":27319296}}
{"i":1,"name":"step 1: forward","ok":true,"error":null,"offset":null,"stats":{"allocated":1024,"peak_allocated":2048,"reserved":2097152,"peak_reserved":2097152}}
`

// goodFolder writes a gpu-check folder in which everything passed, as a
// fake backend would leave it.
func goodFolder(t *testing.T) string {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	write("env.txt", "card=NVIDIA H100 80GB HBM3\ndriver=580.65.06\n")
	write("tests/cuda.log", passingLog)
	write("tests/cuda.rc", "0\n")
	write("tests/tensor.log", passingLog)
	write("tests/tensor.rc", "0\n")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "traces"), 0o755))
	require.NoError(t, writeTraces(filepath.Join(dir, "traces"), judgeTraces()[:2]))
	for _, tr := range judgeTraces()[:2] {
		for _, side := range judgeSides {
			write("judge/"+tr.Name+"."+side+".json", `{"lines": 5, "count": 0, "differences": [], "unavailable": []}`)
		}
	}
	for _, step := range modelSteps() {
		for _, side := range judgeSides {
			write("models/"+step.Name+"."+side+".json", `{"lines": 2, "count": 0, "differences": [], "unavailable": []}`)
		}
		for _, side := range modelSides {
			write("models/"+step.Name+"."+side+".jsonl", modelLines)
		}
	}
	ctx, _ := json.Marshal(contextReport{Device: "cuda:0", Total: 80 << 30, Free: 79 << 30, Used: 1 << 30, ProfileName: "h100-80gb", ProfileContext: 1 << 29, Ratio: 2, Off: true})
	write("context.json", string(ctx))
	tim, _ := json.Marshal(timingReport{Device: "cuda:0", Profile: "h100-80gb", Repeats: 5, Tolerance: 0.2, OK: true,
		Rows: []timingRow{{Kernel: "gemm", Size: "4096x4096x4096 float32", ModelledUS: 2056, MeasuredUS: 2400, Ratio: 1.17}}})
	write("timings.json", string(tim))
	for _, cell := range []string{"02-0", "04-3"} {
		for _, side := range []string{"sim", "cuda"} {
			write("lessons/"+cell+"."+side+".json", `{"cell": "`+cell+`", "device": "`+side+`:0", "stats": {"allocated_bytes.all.current": 0, "reserved_bytes.all.current": 20971520, "allocated_bytes.all.peak": 8000512, "reserved_bytes.all.peak": 20971520, "num_device_alloc": 1}}`)
		}
	}
	return dir
}

func TestReportPassesWhenEverythingAgrees(t *testing.T) {
	dir := goodFolder(t)
	var out, errOut bytes.Buffer
	code := run([]string{"report", dir}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Equal(t, out.String(), string(md))
	for _, want := range []string{"# gpu-check: PASS", "driver: 580.65.06", "| cuda | 0 | 2 | 0 |", "lesson02-two-blocks.torch-vs-cuda | 5 | 0 |", "| gemm | 4096x4096x4096 float32 | 2056.0 | 2400.0 | 1.17 |", "ratio 2.00 **off**", "| 02-0 | 0 \\| 0 | 20971520 \\| 20971520 | 8000512 \\| 8000512 | 20971520 \\| 20971520 | 0 |",
		"| lesson07-gpt-mixed.torch-vs-cuda | 2 | 0 |", "### lesson03-budget", "| step 1: forward | 1024 | 2048 | 2097152 | 2097152 |  |", "| parameters |  |  |  |  | count 27319296 |"} {
		assert.Contains(t, string(md), want)
	}
	var r report
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &r))
	assert.True(t, r.OK)
}

// TestReportFailsLoudly: each way a check can go wrong makes `gpucheck
// report` exit 1 and name it.
func TestReportFailsLoudly(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(dir string) error
		want  string
	}{
		{"a test failed", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "tests/tensor.log"), []byte(passingLog+"--- FAIL: TestMatmul (0.00s)\n"), 0o644)
		}, "tests of tensor: exit 0, failed TestMatmul"},
		{"a binary crashed", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "tests/tensor.rc"), []byte("2\n"), 0o644)
		}, "tests of tensor: exit 2"},
		{"a binary never finished", func(dir string) error { return os.Remove(filepath.Join(dir, "tests/tensor.rc")) }, "tests of tensor: exit -1"},
		{"no GPU: the cuda tests skipped", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "tests/cuda.log"), []byte(passingLog+"--- SKIP: TestConformance2 (0.00s)\n"), 0o644)
		}, "tests of cuda: TestConformance2 skipped"},
		{"torch decided otherwise", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "judge/lesson02-peaks.torch-vs-cuda.json"),
				[]byte(`{"lines": 5, "count": 2, "differences": ["line 3: offset gpukit=0, torch 2097152"]}`), 0o644)
		}, "lesson02-peaks.torch-vs-cuda: 2 difference(s), first: line 3: offset gpukit=0, torch 2097152"},
		{"a judge did not run", func(dir string) error {
			return os.Remove(filepath.Join(dir, "judge/lesson02-two-blocks.sim-vs-cuda.json"))
		}, "lesson02-two-blocks.sim-vs-cuda: no comparison"},
		{"PyTorch's GPT step peaks otherwise", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "models/lesson07-gpt-baseline.torch-vs-cuda.json"),
				[]byte(`{"lines": 14, "count": 1, "differences": ["line 8 (step 2: backward): peak_allocated torch=1435603456, gpukit 1439797760"]}`), 0o644)
		}, "lesson07-gpt-baseline.torch-vs-cuda: 1 difference(s), first: line 8 (step 2: backward): peak_allocated torch=1435603456, gpukit 1439797760"},
		{"a model step did not run in PyTorch", func(dir string) error {
			return os.Remove(filepath.Join(dir, "models/lesson03-freezing.torch-vs-cuda.json"))
		}, "lesson03-freezing.torch-vs-cuda: no comparison"},
		{"no timings", func(dir string) error { return os.Remove(filepath.Join(dir, "timings.json")) }, "timings: open"},
		{"a timing failed", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "timings.json"), []byte(`{"ok": false, "rows": [{"kernel": "gemm", "error": "cuBLAS not found"}]}`), 0o644)
		}, "timings: a workload did not run"},
		{"a lesson reserves otherwise on cuda", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "lessons/04-3.cuda.json"),
				[]byte(`{"stats": {"allocated_bytes.all.current": 0, "reserved_bytes.all.current": 41943040, "allocated_bytes.all.peak": 8000512, "reserved_bytes.all.peak": 20971520, "num_device_alloc": 1}}`), 0o644)
		}, "lesson cell 04-3: reserved_bytes.all.current: sim 20971520, cuda 41943040"},
		{"a pool's peak differs", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "lessons/04-3.cuda.json"),
				[]byte(`{"stats": {"allocated_bytes.all.current": 0, "reserved_bytes.all.current": 20971520, "allocated_bytes.all.peak": 8000512, "reserved_bytes.all.peak": 20971520, "reserved_bytes.small_pool.peak": 2097152, "num_device_alloc": 1}}`), 0o644)
		}, "lesson cell 04-3: reserved_bytes.small_pool.peak: sim 0, cuda 2097152"},
		{"a lesson cell panicked on cuda", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "lessons/02-0.cuda.json"), []byte(`{"panicked": "cuda: LayerNorm: not supported", "stats": {}}`), 0o644)
		}, "lesson cell 02-0: cuda: panicked: cuda: LayerNorm: not supported"},
		{"a lesson cell never finished on cuda", func(dir string) error { return os.Remove(filepath.Join(dir, "lessons/02-0.cuda.json")) },
			"lesson cell 02-0: cuda: no statistics"},
		{"no lesson ran", func(dir string) error {
			if err := os.RemoveAll(filepath.Join(dir, "lessons")); err != nil {
				return err
			}
			return os.Mkdir(filepath.Join(dir, "lessons"), 0o755)
		}, "lessons: no cell ran"},
		{"no tests at all", func(dir string) error { return os.RemoveAll(filepath.Join(dir, "tests")) }, "no test results"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := goodFolder(t)
			require.NoError(t, tc.spoil(dir))
			var out, errOut bytes.Buffer
			assert.Equal(t, 1, run([]string{"report", dir}, &out, &errOut))
			assert.Contains(t, errOut.String(), "FAIL")
			assert.Contains(t, out.String(), "# gpu-check: FAIL")
			assert.Contains(t, out.String(), tc.want)
		})
	}
}

// TestModelTableMarksDifferences: the report shows a model step's points
// side by side, and a point where the sides differ in bold.
func TestModelTableMarksDifferences(t *testing.T) {
	dir := goodFolder(t)
	torch := strings.Replace(modelLines, `"peak_allocated":2048`, `"peak_allocated":4096`, 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "models/lesson03-budget.torch.jsonl"), []byte(torch), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "models/lesson03-freezing.cuda.jsonl")))
	var out, errOut bytes.Buffer
	run([]string{"report", dir}, &out, &errOut)
	md := out.String()
	assert.Contains(t, md, "| step 1: forward | 1024 | **2048 \\| 2048 \\| 4096** |")
	assert.Contains(t, md, "| step 1: forward | **1024 \\| – \\| 1024** | **2048 \\| – \\| 2048** |", "a side that did not run reads –")
}

// TestLessonCountsAreNotCompared: only allocated and reserved bytes, now
// and at the peak, must be equal; other statistics vary from run to run
// (comparedStat).
func TestLessonCountsAreNotCompared(t *testing.T) {
	sim := &cellStats{Stats: map[string]int64{"allocation.all.allocated": 2127, "inactive_split.small_pool.peak": 3, "allocated_bytes.all.current": 512}}
	cuda := &cellStats{Stats: map[string]int64{"allocation.all.allocated": 1728, "inactive_split.small_pool.peak": 4, "allocated_bytes.all.current": 512}}
	assert.Empty(t, compareCell("06-4", sim, cuda).Differences)
	cuda.Stats["allocated_bytes.all.current"] = 1024
	assert.Equal(t, []string{"allocated_bytes.all.current: sim 512, cuda 1024"}, compareCell("06-4", sim, cuda).Differences)
}

func TestParseTestLog(t *testing.T) {
	log := "=== RUN   TestA\n--- PASS: TestA (0.00s)\n    --- PASS: TestA/x (0.00s)\n--- SKIP: TestB (0.00s)\n    x_test.go:3: no GPU\n    --- SKIP: TestC/sub (0.00s)\n--- FAIL: TestD (0.00s)\nFAIL\n"
	r := parseTestLog("p", []byte(log), 1)
	assert.Equal(t, testResult{Package: "p", Exit: 1, Passed: 2, Skipped: 2, Failed: []string{"TestD"}, Skips: []string{"TestB"}}, r)
	assert.False(t, r.ok())
}

func TestTracesAreWellFormed(t *testing.T) {
	names := map[string]bool{}
	for _, tr := range judgeTraces() {
		assert.False(t, names[tr.Name], "two traces called %s", tr.Name)
		names[tr.Name] = true
		live := map[string]bool{}
		var peak, cur int64
		sizes := map[string]int64{}
		for i, o := range tr.Ops {
			switch o.Op {
			case "alloc":
				require.NotNil(t, o.Size, "%s line %d", tr.Name, i)
				assert.False(t, live[o.ID], "%s line %d: id %s reused while live", tr.Name, i, o.ID)
				live[o.ID], sizes[o.ID] = true, *o.Size
				cur += *o.Size
				peak = max(peak, cur)
			case "free":
				assert.True(t, live[o.ID], "%s line %d: free of %s, not live", tr.Name, i, o.ID)
				delete(live, o.ID)
				cur -= sizes[o.ID]
			case "empty_cache", "reset_peak":
			default:
				t.Errorf("%s line %d: op %q", tr.Name, i, o.Op)
			}
		}
		assert.Less(t, peak, int64(8<<30), "%s must stay far below a card's memory (no OOM)", tr.Name)
	}
	dir := t.TempDir()
	require.NoError(t, writeTraces(dir, judgeTraces()))
	b, err := os.ReadFile(filepath.Join(dir, "max-split-size.conf"))
	require.NoError(t, err)
	assert.Equal(t, "max_split_size_mb:64\n", string(b))
	first, err := os.ReadFile(filepath.Join(dir, "lesson02-two-blocks.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, `{"op":"alloc","id":"b0","size":4000000}`, strings.SplitN(string(first), "\n", 2)[0])
}
