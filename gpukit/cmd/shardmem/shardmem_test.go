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
