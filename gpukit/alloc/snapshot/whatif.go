package snapshot

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/gpumem/course/gpukit/alloc"
)

// Setting is one allocator setting to replay under: PYTORCH_CUDA_ALLOC_CONF
// plus the memory fraction of torch.cuda.set_per_process_memory_fraction.
type Setting struct {
	Name     string // as given
	Config   alloc.Config
	Fraction float64 // in (0, 1], 1 for none
}

// ParseSetting reads a setting in the syntax of PYTORCH_CUDA_ALLOC_CONF,
// where per_process_memory_fraction:F (a key of
// c10/cuda/CUDAAllocatorConfig.h since PyTorch 2.9) sets the memory
// fraction. "" is PyTorch's default.
func ParseSetting(s string) (Setting, error) {
	st := Setting{Name: s, Fraction: 1}
	var rest []string
	for _, part := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(part, ":")
		if strings.TrimSpace(k) != "per_process_memory_fraction" {
			rest = append(rest, part)
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(f > 0 && f <= 1) {
			return st, fmt.Errorf("snapshot: per_process_memory_fraction %q: must be a number in (0, 1]", strings.TrimSpace(v))
		}
		st.Fraction = f
	}
	cfg, err := alloc.ParseConfig(strings.Join(rest, ","))
	if err != nil {
		return st, fmt.Errorf("snapshot: %q: %w", s, err)
	}
	st.Config = cfg
	return st, nil
}

// OOM is the first request the replay could not serve.
type OOM struct {
	Index  int // the event's index in the trace; -1 for a block in use before it
	Size   int64
	Stream int64
	Frames []Frame // the Python frames PyTorch recorded with the request
}

// Outcome is what one setting does with a trace's requests.
type Outcome struct {
	Setting       Setting
	Requests      int // alloc and oom events replayed, plus the blocks in use at the first event
	PeakAllocated int64
	PeakReserved  int64
	// At the moment allocated memory peaked: reserved minus allocated, and
	// the largest cached block.
	ReservedAtPeak, LargestFreeAtPeak int64
	DeviceAllocs, DeviceFrees         int64 // num_device_alloc, num_device_free: cudaMalloc (or page maps) and cudaFree (or unmaps)
	Retries                           int64 // num_alloc_retries
	OOM                               *OOM  // nil when every request was served
}

// FragmentationAtPeak is reserved minus allocated memory when allocated
// memory peaked.
func (o *Outcome) FragmentationAtPeak() int64 { return o.ReservedAtPeak - o.PeakAllocated }

// WhatIfOptions choose the device the requests are replayed on.
type WhatIfOptions struct {
	Device   int   // the snapshot's device whose trace is replayed
	Capacity int64 // device memory in bytes; 0: Unlimited
	// Context is device memory the process holds outside the allocator
	// (the CUDA context): it counts against Capacity, not in the figures.
	Context int64
}

// WhatIf replays device d's requests under each setting, one goroutine per
// setting, and returns the outcomes in the order of settings. Requests are
// replayed as recorded: the blocks in use at the first event (asked for
// first, by address), then every alloc (and refused request) and
// free_requested in order, with their sizes and streams; a free that
// waited for other streams completes where the trace shows it completing.
// Each replay stops at its first OOM, as the program would have.
func (s *Snapshot) WhatIf(opt WhatIfOptions, settings []Setting) ([]Outcome, error) {
	if opt.Device < 0 || opt.Device >= len(s.Traces) {
		return nil, fmt.Errorf("snapshot: no trace for device %d (the snapshot has traces for %d devices)", opt.Device, len(s.Traces))
	}
	if opt.Capacity < 0 || opt.Context < 0 || (opt.Capacity > 0 && opt.Context >= opt.Capacity) {
		return nil, fmt.Errorf("snapshot: capacity %d and context %d: the context must be below the capacity", opt.Capacity, opt.Context)
	}
	in, err := s.Reconstruct(opt.Device, s.Settings.Config)
	if err != nil {
		return nil, err
	}
	p := buildPlan(s.Traces[opt.Device])
	// A replay of PyTorch's own decisions finds where the program called
	// empty_cache() before a request.
	if _, err := s.check(CheckOptions{Device: opt.Device, Capacity: opt.Capacity}, p); err != nil {
		return nil, err
	}
	out := make([]Outcome, len(settings))
	errs := make([]error, len(settings))
	var wg sync.WaitGroup
	for i, st := range settings {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = s.whatIf(opt, in, p, st)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Snapshot) whatIf(opt WhatIfOptions, in *Initial, p *plan, st Setting) (Outcome, error) {
	replay := func(stop int) (*replayer, error) {
		r, err := newReplayer(s, opt.Device, st.Config, opt.Capacity, st.Fraction)
		if err != nil {
			return nil, err
		}
		r.p = p
		r.stopAtOOM = true
		r.mem.recorded, r.mem.bases = recordedAddresses(s.Traces[opt.Device], in)
		r.mem.used = opt.Context
		r.allocInitial(in)
		if r.oom == nil {
			r.run(stop)
		}
		return r, nil
	}
	r, err := replay(len(p.steps))
	if err != nil {
		return Outcome{}, err
	}
	o := Outcome{Setting: st, OOM: r.oom}
	for _, ps := range in.Plain {
		o.Requests += len(ps.Blocks)
	}
	for _, ps := range in.Expandable {
		o.Requests += len(ps.Blocks)
	}
	for _, stp := range p.steps {
		if stp.kind == stepAlloc || stp.kind == stepOOM {
			o.Requests++
		}
	}
	o.PeakAllocated = r.a.MaxMemoryAllocated()
	o.PeakReserved = r.a.MaxMemoryReserved()
	stats := r.a.Stats()
	o.DeviceAllocs, o.DeviceFrees, o.Retries = stats["num_device_alloc"], stats["num_device_free"], stats["num_alloc_retries"]
	// Replay again up to the peak to see the cache then.
	peak, err := replay(r.peakAllocStep + 1)
	if err != nil {
		return Outcome{}, err
	}
	o.ReservedAtPeak = peak.a.MemoryReserved()
	for _, seg := range peak.a.Snapshot().Segments {
		for _, b := range seg.Blocks {
			if b.State == alloc.StateInactive && b.Size > o.LargestFreeAtPeak {
				o.LargestFreeAtPeak = b.Size
			}
		}
	}
	return o, nil
}

// recordedAddresses lists the addresses of PyTorch's segments, per size
// and in the order the replay asks for them (the segments of the first
// event by address, as their blocks are asked for first), and the bases of
// its expandable segments, in order.
func recordedAddresses(tr []Event, in *Initial) (map[int64][]uint64, []uint64) {
	rec := map[int64][]uint64{}
	for _, ps := range in.Plain {
		rec[ps.Size] = append(rec[ps.Size], ps.Address)
	}
	for _, e := range tr {
		if e.Action == alloc.ActionSegmentAlloc {
			rec[e.Size] = append(rec[e.Size], e.Addr)
		}
	}
	return rec, in.expandableBases()
}
