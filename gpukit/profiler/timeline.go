package profiler

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpumem/course/gpukit/device"
)

// Category is what a piece of device memory holds, as PyTorch's memory
// profiler (torch.profiler._memory_profiler) classifies it.
type Category int

// The categories, in the order the timeline stacks them.
const (
	Parameter Category = iota
	OptimizerState
	Input
	Temporary
	Activation
	Gradient
	AutogradDetail
	Unknown
	NumCategories
)

var categoryNames = [...]string{"parameter", "optimizer state", "input", "temporary", "activation", "gradient", "autograd detail", "unknown"}

func (c Category) String() string {
	if c >= 0 && c < NumCategories {
		return categoryNames[c]
	}
	return fmt.Sprintf("Category(%d)", int(c))
}

// category classifies a storage from what the profile saw of it:
//
//   - parameter: read or written by an op as a leaf that requires grad;
//   - gradient: the Grad() of such a leaf when an op saw the leaf;
//   - optimizer state: allocated inside an OptimizerStep range and still
//     alive at its end (Adam's moments at the first step), or updated in
//     place by an OptimizerStep range that did not make it (the same
//     moments at later steps);
//   - autograd detail: any other allocation of a Backward range;
//   - temporary: allocated and freed inside one op, or made by an op
//     outside backward and freed before any Backward range began;
//   - activation: made by an op outside backward and still alive when a
//     Backward range began (saved for backward);
//   - input: not made by an op from other tensors (created or loaded),
//     and read by an op;
//   - unknown: the rest, and memory allocated before Start that no op
//     touched.
func (p *Profile) category(r *storageRec) Category {
	switch {
	case r.parameter:
		return Parameter
	case r.gradient:
		return Gradient
	case r.optimizer:
		return OptimizerState
	case r.sameOpFreed:
		return Temporary
	case !r.preexisting && r.allocPhase == Backward:
		return AutogradDetail
	case r.preexisting || !r.produced:
		if r.input {
			return Input
		}
		return Unknown
	case p.backwardStartsWithin(r):
		return Activation
	}
	return Temporary
}

// backwardStartsWithin reports whether a Backward range began while r was
// alive.
func (p *Profile) backwardStartsWithin(r *storageRec) bool {
	from := p.mem[r.allocIdx].Time
	to := p.stopAt
	if r.freeIdx >= 0 {
		to = p.mem[r.freeIdx].Time
	}
	for _, e := range p.events {
		if e.Kind == Range && e.Name == Backward && e.Start >= from && e.Start <= to {
			return true
		}
	}
	return false
}

// TimelinePoint is the device memory right after one memory event (the
// first point: at Start), by category. The categories add up to
// Allocated, the allocator's allocated bytes at that moment: what no
// storage of the profile accounts for (a block taken with Device.Malloc)
// counts as Unknown.
type TimelinePoint struct {
	Time       time.Duration
	Bytes      [NumCategories]int64
	Allocated  int64
	Reserved   int64
	eventIndex int // into MemoryEvents, -1 for the first point
}

// Timeline returns the memory of device d over the profile by category,
// one point at Start and one after every allocation and free on d.
func (p *Profile) Timeline(d *device.Device) ([]TimelinePoint, error) {
	if err := p.ready(); err != nil {
		return nil, err
	}
	if d == nil {
		return nil, errors.New("profiler: Timeline of a nil device")
	}
	base, ok := p.base[d]
	if !ok {
		return nil, fmt.Errorf("profiler: no op or memory event of the profile ran on %s", d.Name())
	}
	// cur holds the storages the profile saw, by category; at each point
	// what the allocator holds beyond them (preexisting memory no op
	// touched, blocks taken with Device.Malloc, no tensor around them)
	// is memory of no known category.
	point := func(pt TimelinePoint) TimelinePoint {
		var seen int64
		for _, b := range pt.Bytes {
			seen += b
		}
		pt.Bytes[Unknown] += pt.Allocated - seen
		return pt
	}
	var cur [NumCategories]int64
	for _, r := range p.recs {
		if r.dev == d && r.preexisting {
			cur[p.category(r)] += r.bytes
		}
	}
	points := []TimelinePoint{point(TimelinePoint{Bytes: cur, Allocated: base, eventIndex: -1})}
	for i, m := range p.mem {
		if m.Device != d {
			continue
		}
		cur[p.category(m.storage)] += m.Bytes
		points = append(points, point(TimelinePoint{Time: m.Time, Bytes: cur, Allocated: m.TotalAllocated, Reserved: m.TotalReserved, eventIndex: i}))
	}
	if len(points) > 1 {
		points[0].Reserved = points[1].Reserved
	}
	return points, nil
}

// PhasePeak is the highest allocated memory of a device during the
// ranges of one name.
type PhasePeak struct {
	Name  string
	Peak  int64 // bytes: the allocator's allocated memory at its highest
	Calls int   // how many ranges of this name
	Start time.Duration
	End   time.Duration // of the range that made the peak
}

// PhasePeaks returns, for every range name in order of first appearance,
// the peak of device d's allocated memory inside those ranges: the
// allocated bytes when a range began, or after any allocation inside it,
// whichever is highest. It equals what the allocator's peak counter
// (MaxMemoryAllocated) reports when reset at the range's start.
func (p *Profile) PhasePeaks(d *device.Device) ([]PhasePeak, error) {
	points, err := p.Timeline(d)
	if err != nil {
		return nil, err
	}
	var out []PhasePeak
	index := map[string]int{}
	for _, e := range p.events {
		if e.Kind != Range {
			continue
		}
		// allocated at the start: after the last memory event before it
		peak := points[0].Allocated
		for _, pt := range points[1:] {
			if pt.eventIndex >= e.memStart {
				break
			}
			peak = pt.Allocated
		}
		for _, pt := range points[1:] {
			if pt.eventIndex >= e.memStart && p.inside(pt.eventIndex, e) {
				peak = max(peak, pt.Allocated)
			}
		}
		i, ok := index[e.Name]
		if !ok {
			i = len(out)
			index[e.Name] = i
			out = append(out, PhasePeak{Name: e.Name})
		}
		out[i].Calls++
		if !ok || peak > out[i].Peak {
			out[i].Peak, out[i].Start, out[i].End = peak, e.Start, e.End
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("profiler: the profile has no ranges; mark phases with Record(%q) and the like", Forward)
	}
	return out, nil
}

// inside reports whether memory event i is counted in range r or in an
// event within it.
func (p *Profile) inside(i int, r *Event) bool {
	for e := p.mem[i].Owner; e != nil; e = e.Parent {
		if e == r {
			return true
		}
	}
	return false
}
