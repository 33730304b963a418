package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
)

// freshDevice is a new sim or meta device with the h100 profile (not the
// registry's: each test starts from an empty allocator).
func freshDevice(t *testing.T, meta bool) *device.Device {
	t.Helper()
	if meta {
		return simtest.Card(t, simtest.Profile("h100-80gb"), simtest.Meta())
	}
	return simtest.Card(t, simtest.Profile("h100-80gb"))
}

func parseModelLines(t *testing.T, b []byte) []modelLine {
	var out []modelLine
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l modelLine
		require.NoError(t, json.Unmarshal([]byte(line), &l), line)
		out = append(out, l)
	}
	return out
}

// TestModelStepsAllocateAlikeOnSimAndMeta: gpu-check measures the sim
// side on a meta device (the full GPT would compute for minutes on the
// CPU); with small shapes, sim, which computes, allocates the same.
func TestModelStepsAllocateAlikeOnSimAndMeta(t *testing.T) {
	for _, step := range modelSteps() {
		t.Run(step.Name, func(t *testing.T) {
			a, err := runModelStep(freshDevice(t, false), step, smallSize)
			require.NoError(t, err)
			b, err := runModelStep(freshDevice(t, true), step, smallSize)
			require.NoError(t, err)
			assert.Equal(t, string(a), string(b))
			lines := parseModelLines(t, a)
			require.NotEmpty(t, lines)
			for i, l := range lines {
				assert.Equal(t, i, l.I)
				assert.True(t, l.OK)
			}
		})
	}
}

// lessonOutput returns the first number after prefix in a lesson's
// recorded outputs (its <!-- outputs ... --> lines, which nbcheck checks
// against a run of the notebook).
func lessonOutput(t *testing.T, lesson, prefix string) int64 {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "lessons", lesson))
	require.NoError(t, err)
	m := regexp.MustCompile(regexp.QuoteMeta(prefix) + `\s*([0-9]+)`).FindSubmatch(b)
	require.NotNil(t, m, "%s: no output %q", lesson, prefix)
	n, err := strconv.ParseInt(string(m[1]), 10, 64)
	require.NoError(t, err)
	return n
}

// TestModelStepsAreTheLessons: the full shapes give the figures the
// lessons print (on a meta device with the h100 profile).
func TestModelStepsAreTheLessons(t *testing.T) {
	points := func(name string) map[string]map[string]int64 {
		step, err := lookupModelStep(name)
		require.NoError(t, err)
		b, err := runModelStep(freshDevice(t, true), step, fullSize)
		require.NoError(t, err)
		m := map[string]map[string]int64{}
		for _, l := range parseModelLines(t, b) {
			m[l.Name] = l.Stats
		}
		return m
	}
	gpt := points("lesson07-gpt-baseline")
	assert.Equal(t, lessonOutput(t, "07-training-budget.md", "parameters:"), gpt["parameters"]["count"])
	assert.Equal(t, 2*gpt["parameters"]["bytes"], gpt["adam state"]["bytes"], "Adam's state is twice the parameters")

	// 03 autograd-saves: "after layer 6: allocated +24.00 MiB" above the
	// weights and the input, and "after Backward: +6.01 MiB", the
	// gradients and the 512-byte loss.
	saves := points("lesson03-autograd-saves")
	base := saves["weights and input"][statAllocated]
	assert.Equal(t, int64(24<<20), saves["layer 6"][statAllocated]-base)
	assert.Equal(t, int64(6*(1<<20+2<<10)+512), saves["backward"][statAllocated]-base)
	assert.Equal(t, int64(4<<20), saves["no-grad layer 6"][statAllocated]-base, "no-grad holds one activation")
}

// TestModelStepsCLI: the models command's list, its errors, and a run.
func TestModelStepsCLI(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"models", "-list"}, &out, &errOut))
	var names []string
	for _, s := range modelSteps() {
		names = append(names, s.Name)
	}
	assert.Equal(t, strings.Join(names, "\n")+"\n", out.String())

	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"models", "-device", "sim:3", "-small", "lesson07-gpt"}, 2, "usage"},
		{[]string{"models", "-device", "sim:3", "no-such-step", filepath.Join(dir, "x")}, 1, `no step "no-such-step"; the steps are lesson03-autograd-saves`},
		{[]string{"models", "-device", "nope:0", "lesson03-budget", filepath.Join(dir, "x")}, 1, "invalid device name"},
		{[]string{"models", "-device", "meta:3", "-profile", "no-card", "lesson03-budget", filepath.Join(dir, "x")}, 1, "no-card"},
		{[]string{"models", "-device", "sim:3", "-profile", "h100-80gb", "-small", "lesson07-gpt-both", filepath.Join(dir, "both.jsonl")}, 0, ""},
	} {
		out.Reset()
		errOut.Reset()
		assert.Equal(t, tc.code, run(tc.args, &out, &errOut), "%v: %s", tc.args, errOut.String())
		assert.Contains(t, errOut.String(), tc.want, "%v", tc.args)
	}
	b, err := os.ReadFile(filepath.Join(dir, "both.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, "parameters", parseModelLines(t, b)[0].Name)
}

// TestPyTorchBuildsTheSameModels runs scripts/gpu_judge_models.py with
// PyTorch on the CPU, where it has one (Debian's python3-torch): every
// step must write the same points, under the same names, with the same
// parameter counts and Adam state, as gpukit's (the memory figures, 0 on
// the CPU, are compared on a card by gpu-check).
func TestPyTorchBuildsTheSameModels(t *testing.T) {
	if testing.Short() {
		t.Skip("runs PyTorch")
	}
	python := ""
	for _, p := range []string{os.Getenv("PYTHON"), "python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); p != "" && err == nil && exec.Command(path, "-c", "import torch").Run() == nil {
			python = path
			break
		}
	}
	if python == "" {
		t.Skip("no python3 with PyTorch ($PYTHON, python3, /usr/bin/python3)")
	}
	script := filepath.Join("..", "..", "..", "scripts")
	cmd := exec.Command(python, "-W", "ignore", "-c", `
import json, sys
sys.path.insert(0, sys.argv[1])
import torch, gpu_judge_models as m
print(json.dumps({s: m.run_step(torch, s, "cpu", small=True) for s in m.STEP_NAMES}))
`, script)
	b, err := cmd.Output()
	require.NoError(t, err, "%s", b)
	var torch map[string][]modelLine
	require.NoError(t, json.Unmarshal(b, &torch))
	require.Len(t, torch, len(modelSteps()))
	memory := map[string]bool{statAllocated: true, statReserved: true, statPeakAlloc: true, statPeakReserved: true}
	for _, step := range modelSteps() {
		g, err := runModelStep(freshDevice(t, true), step, smallSize)
		require.NoError(t, err)
		gpukit := parseModelLines(t, g)
		got := torch[step.Name]
		require.Len(t, got, len(gpukit), step.Name)
		for i := range gpukit {
			assert.Equal(t, gpukit[i].Name, got[i].Name, "%s line %d", step.Name, i)
			for k, v := range gpukit[i].Stats {
				if memory[k] {
					assert.Contains(t, got[i].Stats, k)
					continue
				}
				assert.Equal(t, v, got[i].Stats[k], "%s %s: %s", step.Name, gpukit[i].Name, k)
			}
		}
	}
}
