package main

import (
	"errors"
	"testing"
	"time"

	"github.com/gpumem/course/gpukit/device/simtest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
)

// TestTimingsOnSimMatchTheModel: on sim the measurement is the cost model
// (virtual clocks), so every ratio is 1. This checks the workloads' flops
// and bytes, the events and the arithmetic, end to end, without a GPU.
func TestTimingsOnSimMatchTheModel(t *testing.T) {
	d := simtest.Card(t, simtest.Profile("h100-80gb"))
	got, err := profileFor(d)
	require.NoError(t, err)
	require.Equal(t, "h100-80gb", got.Name)
	r := calibrate(deviceTimer{d: d, s: d.NewStream()}, got, workloads(0.001), 3)
	require.True(t, r.OK, "%+v", r)
	require.Len(t, r.Rows, 5)
	for _, row := range r.Rows {
		assert.InDelta(t, 1, row.Ratio, 0.01, "%s: modelled %.2f µs, measured %.2f µs", row.Kernel, row.ModelledUS, row.MeasuredUS)
		assert.False(t, row.Off, row.Kernel)
	}
	assert.Zero(t, d.MemoryAllocated(), "the workloads free their buffers")
}

// fakeTimer answers modelled time × factor[kernel], or an error.
type fakeTimer struct {
	p      device.Profile
	factor map[string]float64
	fail   string
	calls  int
}

func (f *fakeTimer) measure(w workload) (time.Duration, error) {
	f.calls++
	if w.Name == f.fail {
		return 0, errors.New("no such kernel")
	}
	x, ok := f.factor[w.Name]
	if !ok {
		x = 1
	}
	// Alternate a slow outlier with the true value: the median ignores it.
	if f.calls%3 == 0 {
		x *= 10
	}
	return time.Duration(float64(modelled(f.p, w)) * x), nil
}

func TestCalibrationFlagsFiguresOffByMoreThan20Percent(t *testing.T) {
	p, err := device.LookupProfile("h100-80gb")
	require.NoError(t, err)
	f := &fakeTimer{p: p, factor: map[string]float64{"gemm": 1.19, "d2d": 0.5, "h2d-pageable": 1.3}}
	r := calibrate(f, p, workloads(1), 3)
	require.True(t, r.OK)
	off := map[string]bool{}
	for _, row := range r.Rows {
		off[row.Kernel] = row.Off
	}
	assert.Equal(t, map[string]bool{"gemm": false, "elementwise": false, "h2d-pinned": false, "h2d-pageable": true, "d2d": true}, off)
	assert.InDelta(t, 0.5, r.Rows[4].Ratio, 1e-3)

	f = &fakeTimer{p: p, fail: "elementwise"}
	r = calibrate(f, p, workloads(1), 3)
	assert.False(t, r.OK, "a workload that fails makes the timings fail")
	assert.Equal(t, "no such kernel", r.Rows[1].Error)
}

func TestWorkloadsAtFullScale(t *testing.T) {
	ws := workloads(1)
	assert.Equal(t, "4096x4096x4096 float32", ws[0].Size)
	assert.Equal(t, int64(2*4096*4096*4096), ws[0].Flops)
	assert.Equal(t, int64(256<<20), ws[2].Bytes)
	p, err := device.LookupProfile("h100-80gb")
	require.NoError(t, err)
	// 137 GFLOP at the H100's 67 TFLOPS (FP32) is 2051 µs, plus the launch overhead.
	assert.InDelta(t, 2051+micros(p.LaunchOverhead), micros(modelled(p, ws[0])), 1)
}
