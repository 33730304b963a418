package profiler

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/tensor"
)

// Options choose what a profile records beyond names, times and memory,
// like the arguments of torch.profiler.profile.
type Options struct {
	// RecordShapes records the shapes of each op's inputs (record_shapes),
	// for the Input Shapes column and KeyAverages(GroupByShape).
	RecordShapes bool
	// WithStack records the file:line that called each op (with_stack).
	WithStack bool
}

// Phase names: ranges with these names are the phases of a training step
// that PhasePeaks reports and that the memory timeline uses to tell
// activations, gradients and optimizer state apart.
const (
	Forward       = "forward"
	Backward      = "backward"
	OptimizerStep = "optimizer.step"
	ZeroGrad      = "zero_grad"
)

// Kind tells ops, user ranges and the memory row apart.
type Kind int

// The kinds of Event.
const (
	Op     Kind = iota // one tensor op and its kernel
	Range              // a user range (Record)
	Memory             // "[memory]": memory events outside any op or range
)

// Event is one op or range of a profile. Times are host wall-clock times
// since Start; DeviceStart and DeviceEnd are the kernel's place on its
// device's stream clock (modelled on sim and meta devices).
type Event struct {
	ID          int
	Name        string
	Kind        Kind
	Start, End  time.Duration
	Device      *device.Device // the op's device; nil for host ops and ranges
	DeviceStart time.Duration
	DeviceEnd   time.Duration
	InputShapes [][]int // with RecordShapes
	CallSite    string  // with WithStack: the caller's file:line
	Parent      *Event  // the innermost enclosing range, nil at top level
	Flops       int64
	memStart    int // index of the first memory event after a range began

	// Net bytes allocated minus freed during the event, by the event
	// itself (Self) and with everything it contains.
	SelfCPUMemory, SelfDeviceMemory int64
	CPUMemory, DeviceMemory         int64

	entry    string // outermost gpukit/tensor function on the stack
	children []*Event
}

// DeviceTime is the kernel's modelled duration on the device.
func (e *Event) DeviceTime() time.Duration { return e.DeviceEnd - e.DeviceStart }

// MemoryEvent is one allocation (Bytes > 0) or free (Bytes < 0) of a
// storage, with the allocator's running totals just after it, as PyTorch's
// profiler records them ("[memory]" events in a Chrome trace).
type MemoryEvent struct {
	Time           time.Duration
	Device         *device.Device // nil for host memory
	Addr           uint64
	Bytes          int64
	TotalAllocated int64 // device: allocated bytes after the event; host: the profile's running total
	TotalReserved  int64
	Owner          *Event // the op or range it is counted in; nil outside any
	storage        *storageRec
}

// storageRec is what the profile knows of one storage.
type storageRec struct {
	dev          *device.Device
	bytes        int64 // the block's size on a device (what the allocator counts)
	preexisting  bool  // allocated before Start
	allocIdx     int   // index of its alloc MemoryEvent, -1 if pre-existing
	freeIdx      int   // index of its free MemoryEvent, -1 while alive
	allocPhase   string
	parameter    bool
	gradient     bool
	input        bool // read by an op
	produced     bool // written by an op that read tensors
	optimizer    bool // allocated in an optimizer step and outlived it
	sameOpFreed  bool
	allocPhaseID int // ID of the phase range it was allocated in, -1 outside any
}

type pendingMem struct {
	entry string
	idx   int // index in mem
}

var active atomic.Pointer[Profile]

// Profile records the ops, ranges and memory events of all tensor work
// between Start and Stop. Its methods are safe for concurrent use; ops are
// attributed as if they ran on one goroutine (the training loop).
type Profile struct {
	opts  Options
	start time.Time

	stopOnce sync.Once
	mu       sync.Mutex
	stopped  bool
	stopAt   time.Duration
	events   []*Event
	mem      []MemoryEvent
	ranges   []*Event // open ranges, innermost last
	pending  []pendingMem
	lastAt   time.Duration
	lastOp   *Event
	live     map[*tensor.Storage]*storageRec
	recs     []*storageRec
	base     map[*device.Device]int64 // allocated when the device was first seen
	devs     []*device.Device
	host     int64 // running total of host bytes
	memRow   *Event
}

// ErrEmpty is returned (wrapped) by the reports of a profile that recorded
// nothing.
var ErrEmpty = errors.New("profiler: the profile recorded no ops, ranges or memory events; run the work between Start and Stop")

// Start begins a profile of every tensor op and allocation until Stop. One
// profile runs at a time: starting a second one while the first runs is
// an error (stop the first; use Record for nested ranges).
func Start(opts Options) (*Profile, error) {
	p := &Profile{opts: opts, start: time.Now(),
		live: map[*tensor.Storage]*storageRec{}, base: map[*device.Device]int64{}}
	if !active.CompareAndSwap(nil, p) {
		return nil, errors.New("profiler: a profile is already running; profiles do not nest: Stop it first, or mark a part of it with Record")
	}
	tensor.SetObserver(observer{p})
	return p, nil
}

// Stop ends the profile. Open ranges are closed at this moment. Stopping a
// stopped profile, or a nil one (what a failed Start returned), does
// nothing.
func (p *Profile) Stop() {
	if p == nil {
		return
	}
	p.stopOnce.Do(p.stop)
}

func (p *Profile) stop() {
	// The observer goes first, so that a Start that follows at once
	// installs its own after ours is gone.
	tensor.SetObserver(nil)
	active.CompareAndSwap(p, nil)
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.flushPending()
	for len(p.ranges) > 0 {
		p.closeRange(p.ranges[len(p.ranges)-1], now)
	}
	p.stopped = true
	p.stopAt = now
	p.live = nil
	p.finish()
}

func (p *Profile) now() time.Duration { return time.Since(p.start) }

// Events returns the ops and ranges in the order they started.
func (p *Profile) Events() ([]*Event, error) {
	if err := p.ready(); err != nil {
		return nil, err
	}
	return p.events, nil
}

// MemoryEvents returns the allocations and frees in order.
func (p *Profile) MemoryEvents() ([]MemoryEvent, error) {
	if err := p.ready(); err != nil {
		return nil, err
	}
	return p.mem, nil
}

func (p *Profile) ready() error {
	if p == nil {
		return errors.New("profiler: the profile is nil (did Start return an error?)")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		return errors.New("profiler: the profile is still running; call Stop before reading it")
	}
	if len(p.events) == 0 && len(p.mem) == 0 {
		return ErrEmpty
	}
	return nil
}

// Record opens a user range named name in the running profile, as
// torch.profiler.record_function does, and returns the function that
// closes it:
//
//	defer profiler.Record("forward")()
//
// Ranges nest; ops and memory inside count in the range's totals. Without
// a running profile Record costs one atomic load and returns a no-op.
func Record(name string) (end func()) {
	p := active.Load()
	if p == nil {
		return func() {}
	}
	// A range's boundaries are ordered with the memory events: a free on
	// the collector's cleanup goroutine lands wholly before or wholly
	// after, never with its report after a boundary it preceded.
	var r *Event
	tensor.OrderedWithMemory(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.flushPending()
		now := p.now()
		r = &Event{ID: len(p.events), Name: name, Kind: Range, Start: now, End: -1, memStart: len(p.mem)}
		p.attach(r)
		p.ranges = append(p.ranges, r)
		p.lastAt, p.lastOp = now, nil
	})
	return func() {
		tensor.OrderedWithMemory(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if r.End >= 0 {
				return
			}
			p.flushPending()
			p.closeRange(r, p.now())
		})
	}
}

// closeRange closes r and any range opened inside it and left open.
func (p *Profile) closeRange(r *Event, now time.Duration) {
	for i := len(p.ranges) - 1; i >= 0; i-- {
		open := p.ranges[i]
		open.End = now
		p.ranges = p.ranges[:i]
		if open.Name == OptimizerStep {
			p.markOptimizerState(open)
		}
		if open == r {
			break
		}
	}
	p.lastAt, p.lastOp = now, nil
}

// markOptimizerState marks what an optimizer step allocated and kept.
func (p *Profile) markOptimizerState(r *Event) {
	for _, rec := range p.recs {
		if rec.freeIdx < 0 && rec.allocPhaseID == r.ID && !rec.preexisting {
			rec.optimizer = true
		}
	}
}

func (p *Profile) attach(e *Event) {
	if n := len(p.ranges); n > 0 {
		e.Parent = p.ranges[n-1]
		e.Parent.children = append(e.Parent.children, e)
	}
	p.events = append(p.events, e)
}

// phase returns the innermost open phase range's name and ID ("", -1
// outside any).
func (p *Profile) phase() (string, int) {
	for i := len(p.ranges) - 1; i >= 0; i-- {
		switch r := p.ranges[i]; r.Name {
		case Forward, Backward, OptimizerStep, ZeroGrad:
			return r.Name, r.ID
		}
	}
	return "", -1
}

// observer adapts a Profile to tensor.Observer.
type observer struct{ p *Profile }

func (o observer) Allocated(s *tensor.Storage) { o.p.allocated(s, entry()) }
func (o observer) Freed(s *tensor.Storage)     { o.p.freed(s, entry()) }
func (o observer) Launched(k tensor.Launch)    { o.p.launched(k, entry()) }

const tensorPrefix = "github.com/gpumem/course/gpukit/tensor."

// site is where a tensor call came from: the outermost gpukit/tensor
// function on the stack (the op the user called) and its caller.
type site struct {
	fn     string
	caller uintptr
}

// entry walks the stack up from the tensor seam to the user's code.
func entry() site {
	var pcs [64]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	var s site
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, tensorPrefix) {
			s.fn = f.Function
		} else if s.fn != "" {
			if strings.HasPrefix(f.Function, "runtime.") {
				// called by the runtime: the collector's cleanup of a
				// tensor dropped without Release, not by user code
				return site{}
			}
			s.caller = f.PC
			return s
		}
		if !more {
			return s
		}
	}
}

func callSite(pc uintptr) string {
	if pc == 0 {
		return ""
	}
	f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	return fmt.Sprintf("%s:%d", f.File, f.Line)
}

// opName turns "…/tensor.(*Tensor).Clone" or "…/tensor.FromSlice[...]"
// into "tensor::Clone" / "tensor::FromSlice".
func opName(fn string) string {
	fn = strings.TrimPrefix(fn, tensorPrefix)
	fn = strings.TrimPrefix(fn, "(*Tensor).")
	if i := strings.IndexAny(fn, "[."); i >= 0 {
		fn = fn[:i]
	}
	return "tensor::" + fn
}

func (p *Profile) see(d *device.Device, delta int64) {
	if d == nil {
		return
	}
	if _, ok := p.base[d]; !ok {
		p.base[d] = d.MemoryAllocated() - delta
		p.devs = append(p.devs, d)
	}
}

// rec returns the record of a live storage, creating one for a storage
// allocated before Start.
func (p *Profile) rec(s *tensor.Storage) *storageRec {
	if r, ok := p.live[s]; ok {
		return r
	}
	if s.Freed() {
		return nil
	}
	r := &storageRec{dev: s.Device(), preexisting: true, allocIdx: -1, freeIdx: -1, allocPhaseID: -1}
	r.bytes = s.Nbytes()
	if r.dev != nil {
		b := s.Block()
		if b == nil {
			return nil
		}
		r.bytes = b.Size()
		p.see(r.dev, 0)
	}
	p.live[s] = r
	p.recs = append(p.recs, r)
	return r
}

func (p *Profile) allocated(s *tensor.Storage, at site) {
	d := s.Device()
	size := s.Nbytes()
	if d != nil {
		b := s.Block()
		if b == nil {
			return // zero bytes: no block
		}
		size = b.Size()
	} else if size == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.see(d, size)
	ph, pid := p.phase()
	r := &storageRec{dev: d, bytes: size, allocIdx: len(p.mem), freeIdx: -1, allocPhase: ph, allocPhaseID: pid}
	p.live[s] = r
	p.recs = append(p.recs, r)
	if len(p.pending) > 0 && p.pending[0].entry != at.fn {
		p.flushPending()
	}
	p.pending = append(p.pending, pendingMem{entry: at.fn, idx: len(p.mem)})
	p.addMem(d, s.DataPtr(), size, r)
}

func (p *Profile) addMem(d *device.Device, addr uint64, delta int64, r *storageRec) {
	e := MemoryEvent{Time: p.now(), Device: d, Addr: addr, Bytes: delta, storage: r}
	if d != nil {
		e.TotalAllocated, e.TotalReserved = d.MemoryAllocated(), d.MemoryReserved()
	} else {
		p.host += delta
		e.TotalAllocated = p.host
	}
	p.mem = append(p.mem, e)
	p.lastAt = e.Time
}

func (p *Profile) freed(s *tensor.Storage, at site) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	r, ok := p.live[s]
	if !ok {
		// Allocated before Start and never seen by an op: its size is
		// what the allocator rounds the storage to.
		r = &storageRec{dev: s.Device(), preexisting: true, allocIdx: -1, allocPhaseID: -1, bytes: s.Nbytes()}
		if r.dev != nil {
			if s.Nbytes() == 0 {
				return
			}
			r.bytes = r.dev.AllocConfig().RoundSize(s.Nbytes())
		} else if r.bytes == 0 {
			return
		}
		p.recs = append(p.recs, r)
	}
	delete(p.live, s)
	p.see(r.dev, -r.bytes)
	r.freeIdx = len(p.mem)
	inOp := len(p.pending) > 0 && p.pending[0].entry == at.fn && at.fn != ""
	p.addMem(r.dev, s.DataPtr(), -r.bytes, r)
	switch {
	case inOp: // a temporary of the op under way
		if r.allocIdx >= p.pending[0].idx {
			r.sameOpFreed = true
		}
		p.pending = append(p.pending, pendingMem{entry: at.fn, idx: r.freeIdx})
	case p.lastOp != nil && p.lastOp.entry == at.fn && at.fn != "" && len(p.pending) == 0:
		// freed by the op that just launched its kernel (a deferred
		// Release of a temporary)
		p.own(p.lastOp, r.freeIdx)
		p.lastOp.End = p.mem[r.freeIdx].Time
		if r.allocIdx >= 0 && p.mem[r.allocIdx].Owner == p.lastOp {
			r.sameOpFreed = true
		}
	case at.fn == "":
		// The collector's cleanup goroutine: no code of any range freed
		// it, so it counts in "[memory]".
	default:
		p.flushPending()
		p.own(p.innermost(), r.freeIdx)
	}
}

func (p *Profile) innermost() *Event {
	if n := len(p.ranges); n > 0 {
		return p.ranges[n-1]
	}
	return nil
}

// own counts memory event i in e (nil: outside any op or range).
func (p *Profile) own(e *Event, i int) {
	p.mem[i].Owner = e
}

// flushPending turns allocations that no kernel claimed (creation
// functions such as FromSlice or Empty, which launch none) into ops of
// their own, named after the function.
func (p *Profile) flushPending() {
	if len(p.pending) == 0 {
		return
	}
	first := p.mem[p.pending[0].idx]
	last := p.mem[p.pending[len(p.pending)-1].idx]
	op := &Event{ID: len(p.events), Name: opName(p.pending[0].entry), Kind: Op, Start: first.Time, End: last.Time, entry: p.pending[0].entry}
	if first.Device != nil {
		op.Device = first.Device
	}
	p.attach(op)
	for _, pm := range p.pending {
		p.own(op, pm.idx)
	}
	p.pending = p.pending[:0]
	p.lastOp = op
}

func (p *Profile) launched(k tensor.Launch, at site) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	if len(p.pending) > 0 && p.pending[0].entry != at.fn {
		p.flushPending()
	}
	start := p.lastAt
	if len(p.pending) > 0 {
		start = p.mem[p.pending[0].idx].Time
	}
	op := &Event{ID: len(p.events), Name: "tensor::" + k.Name, Kind: Op, Start: start, End: now,
		Device: k.Device, DeviceStart: k.Start, DeviceEnd: k.End, Flops: k.Flops, entry: at.fn}
	if k.Device != nil {
		p.see(k.Device, 0)
	}
	if p.opts.RecordShapes {
		for _, in := range k.Inputs {
			if in != nil {
				op.InputShapes = append(op.InputShapes, in.Shape())
			}
		}
	}
	if p.opts.WithStack {
		op.CallSite = callSite(at.caller)
	}
	p.attach(op)
	for _, pm := range p.pending {
		p.own(op, pm.idx)
	}
	p.pending = p.pending[:0]
	p.classify(k)
	p.lastAt, p.lastOp = now, op
}

// classify learns what the tensors of a kernel are: parameters (leaves
// that require grad), their gradients, inputs (read), produced (written
// from other tensors).
func (p *Profile) classify(k tensor.Launch) {
	mark := func(t *tensor.Tensor, read bool) {
		if t == nil || t.Storage() == nil {
			return
		}
		r := p.rec(t.Storage())
		if r == nil {
			return
		}
		if read {
			r.input = true
		} else if len(k.Inputs) > 0 {
			r.produced = true
		}
		if t.IsLeaf() && t.RequiresGrad() {
			r.parameter = true
		}
		if g := t.Grad(); g != nil && g.Storage() != nil {
			if gr := p.rec(g.Storage()); gr != nil {
				gr.gradient = true
			}
		}
	}
	mark(k.Out, false)
	// An optimizer step that updates in place a tensor it did not make
	// and that is not a parameter updates its state (Adam's moments made
	// by an earlier step).
	if ph, pid := p.phase(); ph == OptimizerStep && k.Out != nil && slices.Contains(k.Inputs, k.Out) {
		if r := p.rec(k.Out.Storage()); r != nil && !r.parameter && (r.preexisting || r.allocPhaseID != pid) {
			r.optimizer = true
		}
	}
	for _, in := range k.Inputs {
		if in != k.Out {
			mark(in, true)
		}
	}
}

// finish computes the memory totals of every event once the profile
// stopped.
func (p *Profile) finish() {
	for i := range p.mem {
		m := &p.mem[i]
		if m.Owner == nil {
			if p.memRow == nil {
				p.memRow = &Event{ID: -1, Name: "[memory]", Kind: Memory}
			}
			addSelf(p.memRow, m)
			continue
		}
		addSelf(m.Owner, m)
		for e := m.Owner; e != nil; e = e.Parent {
			if m.Device == nil {
				e.CPUMemory += m.Bytes
			} else {
				e.DeviceMemory += m.Bytes
			}
		}
	}
	if p.memRow != nil {
		p.memRow.CPUMemory, p.memRow.DeviceMemory = p.memRow.SelfCPUMemory, p.memRow.SelfDeviceMemory
	}
}

func addSelf(e *Event, m *MemoryEvent) {
	if m.Device == nil {
		e.SelfCPUMemory += m.Bytes
	} else {
		e.SelfDeviceMemory += m.Bytes
	}
}
