package snapwhatif

import (
	"errors"
	"fmt"

	"github.com/gpumem/course/gpukit/alloc/snapshot"
	"github.com/gpumem/course/gpukit/device"
)

// Choose replays the requests of snapshot s on a card of profile card once
// per option (an allocator setting in PYTORCH_CUDA_ALLOC_CONF's syntax,
// plus per_process_memory_fraction:F; "" is PyTorch's default) and returns
// the table, one Row per option in the order given, with the setting to
// run under: of those that fit, the one with the fewest retries, then the
// lowest peak reserved memory, then the earlier option. The card's CUDA
// context counts against its memory. The trace replayed is the one of the
// device with the most events in s (the first on a tie). No options, or an
// option that is not a setting, is an error.
func Choose(s *snapshot.Snapshot, card device.Profile, options []string) (Choice, error) {
	if len(options) == 0 {
		return Choice{}, errors.New("snapwhatif: no settings to choose from")
	}
	settings := make([]snapshot.Setting, len(options))
	for i, o := range options {
		st, err := snapshot.ParseSetting(o)
		if err != nil {
			return Choice{}, fmt.Errorf("snapwhatif: option %d: %w", i, err)
		}
		settings[i] = st
	}
	// A snapshot holds a trace per device; the program ran on the busiest.
	gpu := 0
	for d, tr := range s.Traces {
		if len(tr) > len(s.Traces[gpu]) {
			gpu = d
		}
	}
	// The card's memory, less the CUDA context the process loses before
	// its first tensor.
	outs, err := s.WhatIf(snapshot.WhatIfOptions{Device: gpu, Capacity: card.Capacity, Context: card.ContextSize}, settings)
	if err != nil {
		return Choice{}, err
	}
	c := Choice{Best: -1}
	for i, o := range outs {
		r := Row{Setting: options[i], Fits: o.OOM == nil, PeakAllocated: o.PeakAllocated,
			PeakReserved: o.PeakReserved, Retries: o.Retries}
		c.Rows = append(c.Rows, r)
		if r.Fits && (c.Best < 0 || better(r, c.Rows[c.Best])) {
			c.Best = i
		}
	}
	if c.Best >= 0 {
		c.Headroom = card.Capacity - card.ContextSize - c.Rows[c.Best].PeakReserved
	}
	return c, nil
}

// better reports whether setting a is to be preferred to b, both fitting.
// A retry frees the whole cache and synchronizes the device: a setting
// that fits without one is worth more memory. Then reserved memory decides,
// what the card must hold (allocated memory is only the part of it that
// tensors use).
func better(a, b Row) bool {
	return a.Retries < b.Retries || a.Retries == b.Retries && a.PeakReserved < b.PeakReserved
}
