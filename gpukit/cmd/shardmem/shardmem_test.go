package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --format json prints one object per stage with the fields scripts
// check, measured through the allocator and within 1 % of the paper.
func TestJSONLines(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--params", "7.5e9", "--devices", "16", "--layer-size", "1.875e9", "--format", "json"}, &out, &errb)
	require.Equal(t, exitOK, code, errb.String())
	sc := bufio.NewScanner(&out)
	stage := 0
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		for _, k := range []string{"stage", "devices", "params", "model_state_bytes", "peak_bytes", "step_seconds", "comm_seconds"} {
			assert.Contains(t, m, k)
		}
		assert.Equal(t, float64(stage), m["stage"])
		assert.Equal(t, 16.0, m["devices"])
		assert.InEpsilon(t, m["formula_bytes"], m["model_state_bytes"], 0.01)
		assert.GreaterOrEqual(t, m["peak_bytes"], m["model_state_bytes"])
		assert.Less(t, m["comm_seconds"], m["step_seconds"].(float64)*1.0001)
		assert.NotContains(t, m, "fits", "no card named: no verdict")
		stage++
	}
	assert.Equal(t, 4, stage, "one line per stage")
}

// With a card, the table says whether each stage fits: 7.5 B parameters
// with Adam need 120 GB per card without sharding, which no H100 has;
// ZeRO-3 over 16 cards needs 7.5 GB of model states.
func TestTableSaysWhatFits(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--params", "7.5e9", "--devices", "16", "--stage", "0,3", "--layer-size", "1.875e9", "--card", "h100"}, &out, &errb)
	require.Equal(t, exitOK, code, errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 5, out.String())
	assert.Contains(t, lines[0], "16 cards (h100-80gb)")
	assert.Regexp(t, `^\s+0\s+1(19\.9|20\.0)\d+ .* no$`, lines[2])
	assert.Regexp(t, `^\s+3\s+7\.5\d+ .* yes$`, lines[3])
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--devices", "4"}, "--params must be"},
		{[]string{"--params", "1e9"}, "--devices must be"},
		{[]string{"--params", "1e9", "--devices", "4097"}, "--devices must be"},
		{[]string{"--params", "x", "--devices", "4"}, "--params must be"},
		{[]string{"--params", "1e9", "--devices", "4", "--stage", "4"}, "--stage must be"},
		{[]string{"--params", "1e9", "--devices", "4", "--optimizer", "lion"}, "--optimizer must be"},
		{[]string{"--params", "1e9", "--devices", "4", "--card", "x"}, `--card "x" names no single profile`},
		{[]string{"--params", "1e9", "--devices", "4", "--format", "xml"}, "--format must be"},
		{[]string{"--params", "1e9", "--devices", "4", "--layer-size", "2e9"}, "--layer-size must be"},
		{[]string{"--params", "1e9", "--devices", "4", "extra"}, `unexpected argument "extra"`},
		{[]string{"--bogus"}, "flag provided but not defined"},
		{[]string{"--params", "1e9", "--nodes", "0"}, "--nodes must be between 1 and 4096 (got 0)"},
		{[]string{"--params", "1e9", "--nodes", "2", "--cards-per-node", "0"}, "--cards-per-node must be between 1 and 4096 (got 0)"},
		{[]string{"--params", "1e9", "--nodes", "8", "--devices", "60"}, "--devices 60 is not --nodes 8 × --cards-per-node 8 = 64; give one or the other"},
		{[]string{"--params", "1e9", "--devices", "12", "--cards-per-node", "8"}, "--devices 12 does not fill nodes of 8 cards; use at most 8 or a multiple of 8"},
		{[]string{"--params", "1e9", "--nodes", "2", "--node", "dgx-b300"}, `--node "dgx-b300" names no node; use dgx-h100 or pcie-node`},
		{[]string{"--params", "1e9", "--nodes", "1000", "--cards-per-node", "8"}, "--nodes 1000 × --cards-per-node 8 = 8000 cards; at most 4096"},
	} {
		var out, errb bytes.Buffer
		assert.Equal(t, exitUsage, run(tc.args, &out, &errb), tc.args)
		assert.Contains(t, errb.String(), "shardmem: "+tc.want, tc.args)
		assert.Empty(t, out.String())
	}
	var out bytes.Buffer
	assert.Equal(t, exitOK, run([]string{"-h"}, &out, &out))
	assert.Contains(t, out.String(), "Usage:")
}

// --nodes and --cards-per-node place the cards on nodes: 8 DGX H100s
// are 64 cards, and their ring crosses the NICs, so the same bytes take
// longer than on one node's NVLink.
func TestNodes(t *testing.T) {
	measure := func(args ...string) map[string]any {
		var out, errb bytes.Buffer
		code := run(append([]string{"--params", "7.5e9", "--stage", "0", "--layer-size", "9.375e8", "--format", "json"}, args...), &out, &errb)
		require.Equal(t, exitOK, code, errb.String())
		var m map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &m), out.String())
		return m
	}
	one := measure("--devices", "64")
	dgx := measure("--nodes", "8")
	assert.Equal(t, 64.0, dgx["devices"])
	assert.Equal(t, 8.0, dgx["nodes"])
	assert.Equal(t, 8.0, dgx["cards_per_node"])
	assert.Equal(t, 1.0, one["nodes"])
	assert.Equal(t, one["comm_bytes"], dgx["comm_bytes"])
	assert.Greater(t, dgx["comm_seconds"], one["comm_seconds"])
	pcie := measure("--devices", "64", "--cards-per-node", "8", "--node", "pcie")
	assert.Equal(t, 8.0, pcie["nodes"])
	assert.Greater(t, pcie["comm_seconds"].(float64), 10*dgx["comm_seconds"].(float64), "one 100 Gb/s NIC per node")

	var out, errb bytes.Buffer
	require.Equal(t, exitOK, run([]string{"--params", "1e9", "--nodes", "2", "--cards-per-node", "4", "--stage", "3"}, &out, &errb), errb.String())
	assert.Contains(t, strings.SplitN(out.String(), "\n", 2)[0], "8 cards on 2 dgx-h100 nodes of 4 (meta)")
}
