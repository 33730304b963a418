package main

import (
	"github.com/gpumem/course/gpukit/device"
)

// contextReport is what `gpucheck context` writes: the device memory a
// process loses before its first allocation, which is the one expected
// difference between cuda:0 and sim with the same profile (sim models it
// as the profile's ContextSize).
type contextReport struct {
	Device string `json:"device"`
	Total  int64  `json:"total"`
	Free   int64  `json:"free"`
	// Used is total - free before the allocator reserved anything: the
	// CUDA context, and whatever other processes hold.
	Used            int64   `json:"used"`
	ProfileName     string  `json:"profile"`
	ProfileContext  int64   `json:"profile_context"`
	Ratio           float64 `json:"ratio"` // used / profile_context
	Off             bool    `json:"off"`   // |ratio - 1| > calibrationTolerance
	ReservedAtStart int64   `json:"reserved_at_start"`
}

// measureContext reads d's memory before the allocator has reserved
// anything and sets it beside profile p's ContextSize.
func measureContext(d *device.Device, p device.Profile) contextReport {
	free, total := d.MemInfo()
	r := contextReport{
		Device: d.Name(), Total: total, Free: free, Used: total - free,
		ProfileName: p.Name, ProfileContext: p.ContextSize, ReservedAtStart: d.MemoryReserved(),
	}
	r.Used -= r.ReservedAtStart
	if p.ContextSize > 0 {
		r.Ratio = float64(r.Used) / float64(p.ContextSize)
		r.Off = r.Ratio < 1-calibrationTolerance || r.Ratio > 1+calibrationTolerance
	}
	return r
}
