// Package synthsnap writes synthetic PyTorch memory snapshots of any size,
// for measuring how memtrace reads large files (its tests and benchmarks,
// and the gensnap program beside it).
//
// The trace is one a caching allocator really makes: Cycles of 16 requests
// of distinct large sizes (10 MiB, 12 MiB, ... 40 MiB: PyTorch's
// get_allocation_size gives each its own segment of exactly that size),
// each block freed four requests later. The first cycle makes the 16
// segments (segment_alloc before each alloc); later cycles find each size
// in the cache, at the same address, so that memtrace whatif's check agrees
// with every decision. The final segments hold one inactive block each.
//
// Most of the bytes are the Python frames of the events, as in real
// snapshots. Frames come from a pool of distinct frames, stacks from a pool
// of distinct stacks, so that the file repeats the same stacks as a
// training loop does.
//
// Two layouts:
//
//   - PyTorch: what Python's pickler writes for torch.cuda.memory._snapshot()
//     (protocol 4, FRAME every 64 KiB, every dict, list and str memoized,
//     a frame dict written once and then referred to by LONG_BINGET, as
//     PyTorch's py_symbolize shares one dict per distinct frame); the keys
//     and their order are PyTorch 2.6's (compile_context and user_metadata
//     included);
//   - Plain: what gpukit's own encoder writes (gpukit/internal/pickle:
//     protocol 2, no memo, every frame written out in full).
package synthsnap

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
)

// Layout is how the pickle is written.
type Layout int

const (
	PyTorch Layout = iota // Python's pickler, protocol 4, with the memo
	Plain                 // gpukit's encoder, protocol 2, no memo
)

// Options shape a synthetic snapshot.
type Options struct {
	// Events is the number of trace events, rounded up to whole cycles
	// (16 segment_alloc events, then 48 events a cycle).
	Events int
	// Frames is the mean number of frames of an event; each stack has
	// between Frames/2 and Frames*3/2.
	Frames int
	// UniqueFrames and Stacks size the pools (defaults 2000 and 4096).
	UniqueFrames, Stacks int
	Layout               Layout
	// ShareFrames makes a free event refer to the frames list of its
	// alloc (PyTorch 2.1 and later share one list per traceback); without
	// it every event has its own list (of shared frame dicts).
	ShareFrames bool
}

// Info describes what Write wrote.
type Info struct {
	Events, Allocs int
	Bytes          int64
	// Sizes are the request sizes of a cycle.
	Sizes []int64
}

// Sizes of the requests of a cycle.
const (
	cycleLen = 16
	window   = 4 // a block is freed this many requests after its alloc
)

// BaseAddress is the address of the first segment.
const BaseAddress uint64 = 0x7f0000000000

// Size is the size of request j of a cycle.
func Size(j int) int64 { return int64(10+2*j) << 20 }

// Frame is one Python frame.
type Frame struct {
	Filename string
	Line     int
	Name     string
}

var modules = []string{"module", "linear", "activation", "normalization", "dropout", "sparse", "conv", "container", "transformer", "loss"}
var funcs = []string{"forward", "_call_impl", "_wrapped_call_impl", "backward", "step", "_conv_forward", "linear", "gelu", "layer_norm", "<module>", "train_step", "main"}

// FrameOf is frame f of the pool.
func FrameOf(f int) Frame {
	return Frame{
		Filename: "/opt/conda/envs/train/lib/python3.11/site-packages/torch/nn/modules/" + modules[f%len(modules)] + "_" + strconv.Itoa(f/len(modules)%97) + ".py",
		Line:     1 + f,
		Name:     funcs[f%len(funcs)],
	}
}

func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// StackOf lists the pool frames of stack s.
func (o Options) StackOf(s int) []int {
	o = o.withDefaults()
	h := mix(uint64(s) + 1)
	n := o.Frames/2 + int(h%uint64(o.Frames+1))
	out := make([]int, n)
	for k := range out {
		out[k] = int(mix(h+uint64(k)) % uint64(o.UniqueFrames))
	}
	return out
}

// StackOfAlloc is the stack of the k-th alloc of the trace (0-based).
func (o Options) StackOfAlloc(k int) int {
	o = o.withDefaults()
	return int(mix(uint64(k)*2654435761) % uint64(o.Stacks))
}

func (o Options) withDefaults() Options {
	if o.UniqueFrames <= 0 {
		o.UniqueFrames = 2000
	}
	if o.Stacks <= 0 {
		o.Stacks = 4096
	}
	if o.Frames < 0 {
		o.Frames = 0
	}
	return o
}

// Write writes the snapshot to w.
func Write(w io.Writer, o Options) (Info, error) {
	o = o.withDefaults()
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 1<<20)
	p := &writer{o: o, out: bw, strMemo: map[string]int{}, frameMemo: map[int]int{}}
	if o.Layout == PyTorch {
		p.framed = true
		p.raw([]byte{0x80, 4})
	} else {
		p.raw([]byte{0x80, 2})
	}
	info := p.snapshot()
	p.op('.')
	p.flushFrame(true)
	if p.err == nil {
		p.err = bw.Flush()
	}
	info.Bytes = cw.n
	return info, p.err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// writer emits opcodes; with framed, in FRAMEs of at least 64 KiB as
// Python's _Framer does.
type writer struct {
	o      Options
	out    *bufio.Writer
	framed bool
	frame  []byte
	err    error

	memoLen   int
	strMemo   map[string]int // shared str objects: key names, actions, frame strings
	frameMemo map[int]int    // pool frame -> memo index of its dict
}

func (p *writer) raw(b []byte) {
	if p.err != nil {
		return
	}
	_, p.err = p.out.Write(b)
}

func (p *writer) op(b ...byte) {
	if p.framed {
		p.frame = append(p.frame, b...)
		return
	}
	p.raw(b)
}

func (p *writer) flushFrame(final bool) {
	if !p.framed || len(p.frame) == 0 || (!final && len(p.frame) < 64<<10) {
		return
	}
	var hdr [9]byte
	hdr[0] = 0x95
	binary.LittleEndian.PutUint64(hdr[1:], uint64(len(p.frame)))
	p.raw(hdr[:])
	p.raw(p.frame)
	p.frame = p.frame[:0]
}

func (p *writer) memoize() {
	if p.o.Layout == PyTorch {
		p.op(0x94)
		p.memoLen++
	}
}

func (p *writer) get(idx int) {
	if idx < 256 {
		p.op('h', byte(idx))
		return
	}
	p.op('j', byte(idx), byte(idx>>8), byte(idx>>16), byte(idx>>24))
}

// str writes a new str object (memoized under PyTorch's layout).
func (p *writer) str(s string) {
	if p.o.Layout == PyTorch && len(s) < 256 {
		p.op(0x8c, byte(len(s)))
	} else {
		p.op('X', byte(len(s)), byte(len(s)>>8), byte(len(s)>>16), byte(len(s)>>24))
	}
	p.op([]byte(s)...)
	p.memoize()
}

// shared writes a str that is one object wherever it appears: the memo
// refers back to its first occurrence.
func (p *writer) shared(s string) {
	if p.o.Layout == PyTorch {
		if idx, ok := p.strMemo[s]; ok {
			p.get(idx)
			return
		}
		p.strMemo[s] = p.memoLen
	}
	p.str(s)
}

// int writes x as both of gpukit's encoder and Python's pickler do.
func (p *writer) int(x int64) {
	switch {
	case x >= 0 && x < 256:
		p.op('K', byte(x))
	case x >= 0 && x < 65536:
		p.op('M', byte(x), byte(x>>8))
	case x >= -1<<31 && x < 1<<31:
		p.op('J', byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
	default:
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(x))
		n := 8
		for n > 1 && ((b[n-1] == 0 && b[n-2] < 0x80) || (b[n-1] == 0xff && b[n-2] >= 0x80)) {
			n--
		}
		p.op(0x8a, byte(n))
		p.op(b[:n]...)
	}
}

func (p *writer) bool(b bool) {
	if b {
		p.op(0x88)
	} else {
		p.op(0x89)
	}
}

// dict writes a dict of n pairs; kv writes them. Python's pickler writes a
// single pair with SETITEM, gpukit's encoder always with MARK ... SETITEMS.
func (p *writer) dict(n int, kv func()) {
	p.flushFrame(false) // frames end between opcodes
	p.op('}')
	p.memoize()
	if n == 0 {
		return
	}
	if n == 1 && p.o.Layout == PyTorch {
		kv()
		p.op('s')
		return
	}
	p.op('(')
	kv()
	p.op('u')
}

// list writes a list of n items, in batches of 1000 as both picklers do.
func (p *writer) list(n int, item func(i int)) {
	p.flushFrame(false)
	p.op(']')
	p.memoize()
	for start := 0; start < n; start += 1000 {
		end := min(start+1000, n)
		if end-start == 1 && p.o.Layout == PyTorch {
			item(start)
			p.op('a')
			continue
		}
		p.op('(')
		for i := start; i < end; i++ {
			item(i)
		}
		p.op('e')
	}
}

func (p *writer) frameDict(f int) {
	p.flushFrame(false)
	if p.o.Layout == PyTorch {
		if idx, ok := p.frameMemo[f]; ok {
			p.get(idx)
			return
		}
		p.frameMemo[f] = p.memoLen
	}
	fr := FrameOf(f)
	p.dict(3, func() {
		p.shared("name")
		p.shared(fr.Name)
		p.shared("filename")
		p.shared(fr.Filename)
		p.shared("line")
		p.int(int64(fr.Line))
	})
}

type event struct {
	action string
	addr   uint64
	size   int64
	stack  int // -1: no frames
	alloc  int // for frees: the alloc whose frames list they share
}

func (p *writer) snapshot() Info {
	o := p.o
	var info Info
	var addrs [cycleLen]uint64
	next := BaseAddress
	for j := range addrs {
		addrs[j] = next
		next += uint64(Size(j))
		info.Sizes = append(info.Sizes, Size(j))
	}
	cycles := 1
	if o.Events > cycleLen {
		cycles = (o.Events - cycleLen + 3*cycleLen - 1) / (3 * cycleLen)
	}
	p.dict(3, func() {
		p.shared("segments")
		p.list(cycleLen, func(j int) { p.segment(addrs[j], Size(j)) })
		p.shared("device_traces")
		p.list(1, func(int) {
			n := cycleLen + cycles*3*cycleLen
			info.Events = n
			k := 0 // the next event
			allocs := 0
			listMemo := map[int]int{} // alloc -> memo index of its frames list
			live := make([]int, 0, window+1)
			var pending []event
			emit := func(e event) {
				pending = append(pending, e)
			}
			p.list(n, func(i int) {
				for len(pending) == 0 {
					// Refill with the next cycle's events.
					c := k / (3 * cycleLen)
					for j := range cycleLen {
						if c == 0 {
							emit(event{action: "segment_alloc", addr: addrs[j], size: Size(j), stack: o.StackOfAlloc(allocs)})
						}
						emit(event{action: "alloc", addr: addrs[j], size: Size(j), stack: o.StackOfAlloc(allocs), alloc: allocs})
						live = append(live, allocs)
						allocs++
						if len(live) > window {
							a := live[0]
							live = live[1:]
							jj := a % cycleLen
							emit(event{action: "free_requested", addr: addrs[jj], size: Size(jj), stack: o.StackOfAlloc(a), alloc: a})
							emit(event{action: "free_completed", addr: addrs[jj], size: Size(jj), stack: o.StackOfAlloc(a), alloc: a})
						}
					}
					for _, a := range live {
						jj := a % cycleLen
						emit(event{action: "free_requested", addr: addrs[jj], size: Size(jj), stack: o.StackOfAlloc(a), alloc: a})
						emit(event{action: "free_completed", addr: addrs[jj], size: Size(jj), stack: o.StackOfAlloc(a), alloc: a})
					}
					live = live[:0]
					k += 3 * cycleLen
				}
				e := pending[0]
				pending = pending[1:]
				p.event(i, e, listMemo)
			})
			info.Allocs = allocs
		})
		p.shared("allocator_settings")
		p.settings()
	})
	return info
}

func (p *writer) segment(addr uint64, size int64) {
	p.dict(12, func() {
		p.shared("device")
		p.int(0)
		p.shared("address")
		p.int(int64(addr))
		p.shared("total_size")
		p.int(size)
		p.shared("allocated_size")
		p.int(0)
		p.shared("active_size")
		p.int(0)
		p.shared("requested_size")
		p.int(0)
		p.shared("stream")
		p.int(0)
		p.shared("segment_type")
		p.shared("large")
		p.shared("segment_pool_id")
		p.int(0)
		p.int(0)
		p.op(0x86) // TUPLE2
		p.memoize()
		p.shared("is_expandable")
		p.bool(false)
		p.shared("frames")
		p.list(0, nil)
		p.shared("blocks")
		p.list(1, func(int) {
			p.dict(5, func() {
				p.shared("address")
				p.int(int64(addr))
				p.shared("size")
				p.int(size)
				p.shared("requested_size")
				p.int(size)
				p.shared("state")
				p.shared("inactive")
				p.shared("frames")
				p.list(0, nil)
			})
		})
	})
}

func (p *writer) event(i int, e event, listMemo map[int]int) {
	o := p.o
	p.dict(8, func() {
		p.shared("action")
		p.shared(e.action)
		p.shared("addr")
		p.int(int64(e.addr))
		p.shared("size")
		p.int(e.size)
		p.shared("stream")
		p.int(0)
		p.shared("time_us")
		p.int(1_700_000_000_000_000 + int64(i)*7)
		p.shared("compile_context")
		p.str("N/A") // a new str for every event, as PyTorch makes it
		p.shared("user_metadata")
		p.shared("")
		p.shared("frames")
		if o.Layout == PyTorch && o.ShareFrames && e.action != "alloc" && e.action != "segment_alloc" {
			if idx, ok := listMemo[e.alloc]; ok {
				p.get(idx)
				if e.action == "free_completed" {
					delete(listMemo, e.alloc)
				}
				return
			}
		}
		if e.action == "alloc" && o.ShareFrames {
			listMemo[e.alloc] = p.memoLen
		}
		stack := o.StackOf(e.stack)
		p.list(len(stack), func(k int) { p.frameDict(stack[k]) })
	})
}

func (p *writer) settings() {
	divs := []string{"1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1024", "2048", "4096", "8192", "16384", "32768"}
	p.dict(9, func() {
		p.shared("PYTORCH_CUDA_ALLOC_CONF")
		p.shared("")
		p.shared("max_split_size")
		p.int(-1)
		p.shared("garbage_collection_threshold")
		p.op('G', 0, 0, 0, 0, 0, 0, 0, 0)
		p.shared("expandable_segments")
		p.bool(false)
		p.shared("pinned_num_register_threads")
		p.int(1)
		p.shared("release_lock_on_cudamalloc")
		p.bool(false)
		p.shared("pinned_use_cuda_host_register")
		p.bool(false)
		p.shared("graph_capture_record_stream_reuse")
		p.bool(false)
		p.shared("roundup_power2_divisions")
		p.dict(len(divs), func() {
			for _, d := range divs {
				p.shared(d)
				p.int(0)
			}
		})
	})
}

// String describes o, for logs.
func (o Options) String() string {
	layout := "pytorch"
	if o.Layout == Plain {
		layout = "plain"
	}
	return fmt.Sprintf("%d events, %d frames an event, %s layout, share=%v", o.Events, o.Frames, layout, o.ShareFrames)
}
