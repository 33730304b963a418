package device

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/device/profile"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/dtypes"
)

// Names shared with the backends; see package backend.
type (
	// Backend is raw device memory (alloc.Memory) plus copies, streams,
	// events, clocks, memory information and a profile.
	Backend = backend.Backend
	// Profile carries the published figures of a card.
	Profile = profile.Profile
	// Node is a machine of several cards and the network between such
	// machines.
	Node = profile.Node
	// Kernel is the cost of a kernel for Launch.
	Kernel = profile.Kernel
	// Kind is the backend family: Sim, Meta or CUDA.
	Kind = backend.Kind
	// HostBuffer is host memory to copy from or to, pinned or pageable.
	HostBuffer = backend.HostBuffer
	// Compute is the kernels of a backend (sim, meta and cuda implement
	// it); get a device's with d.Compute(), the host's with HostCompute.
	Compute = backend.Compute
	// Strided is an N-d operand of a Compute call.
	Strided = backend.Strided
	// Dtype is the element type of a Compute operand.
	Dtype = dtypes.Dtype
)

// The element types of Compute operands.
const (
	Float32 = dtypes.Float32
	Float64 = dtypes.Float64
)

// The backend kinds.
const (
	Sim  = backend.Sim
	Meta = backend.Meta
	CUDA = backend.CUDA
)

// Units, re-exported for lessons.
const (
	KiB    = profile.KiB
	MiB    = profile.MiB
	GiB    = profile.GiB
	GBps   = profile.GBps
	TFLOPS = profile.TFLOPS
)

// ProfileEnvVar names the environment variable that selects the profile of
// sim devices opened without WithProfile (default "classroom").
const ProfileEnvVar = "GPUKIT_PROFILE"

// DefaultMetaProfile is the profile of meta devices opened without
// WithProfile.
const DefaultMetaProfile = "h100-80gb"

// Profiles returns the built-in profiles, smallest card first.
func Profiles() []Profile { return profile.Profiles() }

// LookupProfile returns the built-in profile called name.
func LookupProfile(name string) (Profile, error) {
	p, err := profile.LookupProfile(name)
	if err != nil {
		return Profile{}, fmt.Errorf("device: %s", strings.TrimPrefix(err.Error(), "profile: "))
	}
	return p, nil
}

// PeerPath says which link a copy from a card of profile src to one of
// profile dst takes, and its bandwidth in bytes/s: "NVLink" when both
// cards have it, "PCIe" otherwise (see the cost model in the package
// documentation).
func PeerPath(src, dst Profile) (link string, bandwidth float64) {
	return profile.PeerPath(src, dst)
}

// Nodes returns the built-in nodes (dgx-h100, pcie-node).
func Nodes() []Node { return profile.Nodes() }

// LookupNode returns the built-in node called name.
func LookupNode(name string) (Node, error) {
	n, err := profile.LookupNode(name)
	if err != nil {
		return Node{}, fmt.Errorf("device: %s", strings.TrimPrefix(err.Error(), "profile: "))
	}
	return n, nil
}

// Option configures a device when it is first opened.
type Option func(*options)

type options struct {
	profile   *Profile
	cfg       *alloc.Config
	workspace *string // CUBLAS_WORKSPACE_CONFIG, see blas.go
}

// WithProfile sets the profile of a sim or meta device.
func WithProfile(p Profile) Option { return func(o *options) { o.profile = &p } }

// WithAllocConfig sets the caching allocator's configuration; the default
// comes from alloc.ConfigFromEnv (GPUKIT_ALLOC_CONF).
func WithAllocConfig(c alloc.Config) Option { return func(o *options) { o.cfg = &c } }

// Device pairs a backend with PyTorch's caching allocator. It is safe for
// concurrent use.
type Device struct {
	b   Backend
	a   *alloc.Allocator
	cfg alloc.Config

	wsSize int64 // bytes of each stream's cuBLAS workspace (blas.go); 0: none
	wsMu   sync.Mutex
	ws     map[alloc.Stream]*alloc.Block
}

var registry = struct {
	sync.Mutex
	m map[string]*Device
}{m: map[string]*Device{}}

// openCUDA opens a CUDA device. It is set by the cuda-tagged build.
var openCUDA func(index int) (Backend, error)

// ParseName parses a device name: "sim:N", "meta:N" (N in 0..15) or
// "cuda:N". A bare "sim", "meta" or "cuda" means index 0.
func ParseName(name string) (Kind, int, error) {
	k, idx, hasIdx := strings.Cut(strings.TrimSpace(name), ":")
	var kind Kind
	switch strings.ToLower(k) {
	case "sim":
		kind = Sim
	case "meta":
		kind = Meta
	case "cuda":
		kind = CUDA
	default:
		return 0, 0, nameError(name)
	}
	i := 0
	if hasIdx {
		var err error
		i, err = strconv.Atoi(idx)
		if err != nil || i < 0 || (kind != CUDA && i > sim.MaxIndex) {
			return 0, 0, nameError(name)
		}
	}
	return kind, i, nil
}

func nameError(name string) error {
	return fmt.Errorf("device: invalid device name %q; valid forms are \"sim:N\" and \"meta:N\" with N in 0..%d, and \"cuda:N\" (e.g. \"sim:0\", \"meta:0\", \"cuda:0\")",
		name, sim.MaxIndex)
}

// Open returns the device called name: "sim:N" (simulated, real values),
// "meta:N" (simulated, no bytes) or "cuda:N" (needs -tags cuda). The same
// name always returns the same *Device; options apply when it is first
// opened, and opening it again with different options is an error.
func Open(name string, opts ...Option) (*Device, error) {
	kind, index, err := ParseName(name)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s:%d", kind, index)
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	registry.Lock()
	defer registry.Unlock()
	if d, ok := registry.m[key]; ok {
		if o.profile != nil && *o.profile != d.Profile() {
			return nil, fmt.Errorf("device: %s is already open with profile %q; options apply only when a device is first opened", key, d.Profile().Name)
		}
		if o.cfg != nil && *o.cfg != d.cfg {
			return nil, fmt.Errorf("device: %s is already open with allocator config %q; options apply only when a device is first opened", key, d.cfg)
		}
		return d, nil
	}
	var b Backend
	switch kind {
	case Sim, Meta:
		p, err := defaultProfile(kind, o)
		if err != nil {
			return nil, err
		}
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("device: %s: %s", key, strings.TrimPrefix(err.Error(), "profile: "))
		}
		if kind == Sim {
			b = sim.New(index, p)
		} else {
			b = sim.NewMeta(index, p)
		}
	case CUDA:
		if o.profile != nil {
			return nil, fmt.Errorf("device: %s: a CUDA device takes its profile from the hardware; WithProfile applies to sim and meta devices only", key)
		}
		if openCUDA == nil {
			return nil, fmt.Errorf("device: %s: this program was built without the CUDA backend; rebuild with -tags cuda on a machine with an NVIDIA GPU and the CUDA 11.8 or 12 header cuda.h (it runs with CUDA 11 to 13), or use \"sim:%d\"", key, index)
		}
		if b, err = openCUDA(index); err != nil {
			return nil, fmt.Errorf("device: %s: %w", key, err)
		}
	}
	d, err := newDevice(b, o)
	if err != nil {
		return nil, err
	}
	registry.m[key] = d
	return d, nil
}

func defaultProfile(kind Kind, o options) (Profile, error) {
	if o.profile != nil {
		return *o.profile, nil
	}
	if kind == Meta {
		return LookupProfile(DefaultMetaProfile)
	}
	name := os.Getenv(ProfileEnvVar)
	if name == "" {
		return LookupProfile("classroom")
	}
	p, err := LookupProfile(name)
	if err != nil {
		return Profile{}, fmt.Errorf("%w (from %s)", err, ProfileEnvVar)
	}
	return p, nil
}

// MustOpen is Open that panics on error, for examples and notebooks.
func MustOpen(name string, opts ...Option) *Device {
	d, err := Open(name, opts...)
	if err != nil {
		panic(err)
	}
	return d
}

// DeviceEnvVar names the environment variable that selects the device
// Default returns (default "sim:0"). GPUKIT_DEVICE=cuda:0 runs the lessons
// and the tests that use the default device on a GPU.
const DeviceEnvVar = "GPUKIT_DEVICE"

// Default returns the device named by GPUKIT_DEVICE, "sim:0" when it is
// unset; a sim device is opened with the profile named by GPUKIT_PROFILE or
// "classroom". It panics if GPUKIT_DEVICE, GPUKIT_PROFILE or
// GPUKIT_ALLOC_CONF is invalid.
func Default() *Device {
	name := strings.TrimSpace(os.Getenv(DeviceEnvVar))
	if name == "" {
		return MustOpen("sim:0")
	}
	d, err := Open(name)
	if err != nil {
		panic(fmt.Errorf("%w (from %s)", err, DeviceEnvVar))
	}
	return d
}

// New returns a device around any backend, outside the registry: Open does
// not find it, and CopyDevice between it and another device fails. It is
// meant for tests and custom backends. WithProfile is refused: the backend
// carries its profile.
func New(b Backend, opts ...Option) (*Device, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.profile != nil {
		return nil, fmt.Errorf("device: New: the backend carries its profile; WithProfile applies to Open only")
	}
	return newDevice(b, o)
}

func newDevice(b Backend, o options) (*Device, error) {
	var cfg alloc.Config
	if o.cfg != nil {
		cfg = *o.cfg
	} else {
		var err error
		if cfg, err = alloc.ConfigFromEnv(); err != nil {
			return nil, fmt.Errorf("device: %s: %w", b.Name(), err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("device: %s: %w", b.Name(), err)
	}
	ws, err := workspaceSize(o, b)
	if err != nil {
		return nil, fmt.Errorf("device: %s: %w", b.Name(), err)
	}
	return &Device{b: b, a: alloc.New(b, cfg, b.Index()), cfg: cfg, wsSize: ws}, nil
}

// Name returns the device name, such as "sim:0".
func (d *Device) Name() string { return d.b.Name() }

// String returns the name, the card and the capacity.
func (d *Device) String() string {
	p := d.b.Profile()
	return fmt.Sprintf("%s (%s, %.2f GiB)", d.Name(), p.Name, float64(p.Capacity)/float64(GiB))
}

// Index returns the device ordinal.
func (d *Device) Index() int { return d.b.Index() }

// Kind returns Sim, Meta or CUDA.
func (d *Device) Kind() Kind { return d.b.Kind() }

// Profile returns the card's profile.
func (d *Device) Profile() Profile { return d.b.Profile() }

// Allocator returns the caching allocator.
func (d *Device) Allocator() *alloc.Allocator { return d.a }

// Backend returns the raw backend, beneath the allocator.
func (d *Device) Backend() Backend { return d.b }

// AllocConfig returns the allocator configuration the device was opened with.
func (d *Device) AllocConfig() alloc.Config { return d.cfg }

// ---- memory ---------------------------------------------------------------

// Malloc allocates size bytes for use on stream s through the caching
// allocator. An *alloc.OutOfMemoryError is returned when even an emptied
// cache cannot make room.
func (d *Device) Malloc(size int64, s alloc.Stream) (*alloc.Block, error) {
	return d.a.Malloc(size, s)
}

// Free returns b to the caching allocator.
func (d *Device) Free(b *alloc.Block) { d.a.Free(b) }

// RecordStream marks b as used by stream s (torch's Tensor.record_stream).
func (d *Device) RecordStream(b *alloc.Block, s alloc.Stream) { d.a.RecordStream(b, s) }

// Bytes returns the backing bytes of b, len(b.Size()), on a sim device; nil
// on meta and cuda devices and for a block not on d. The slice aliases device
// memory: writes through it are seen by copies and kernels.
func (d *Device) Bytes(b *alloc.Block) []byte { return d.b.Bytes(b.Addr(), b.Size()) }

// MemInfo returns free and total device memory as the device sees it
// (cudaMemGetInfo): memory cached by the allocator counts as used, and so
// does the context the process lost before its first tensor
// (Profile.ContextSize on sim and meta devices), which is why free memory
// is less than total minus MemoryReserved.
func (d *Device) MemInfo() (free, total int64) { return d.b.MemInfo() }

// HostAlloc returns size bytes of host memory, page-locked when pinned
// (cuMemHostAlloc on cuda). Call Free on the buffer when done.
func (d *Device) HostAlloc(size int64, pinned bool) (*HostBuffer, error) {
	return d.b.HostAlloc(size, pinned)
}

// ---- streams, events, clocks ---------------------------------------------

// DefaultStream returns stream 0.
func (d *Device) DefaultStream() alloc.Stream { return 0 }

// NewStream creates a stream.
func (d *Device) NewStream() alloc.Stream { return d.b.NewStream() }

// Synchronize waits for all work on the device (cudaDeviceSynchronize).
func (d *Device) Synchronize() { d.b.Synchronize() }

// StreamSynchronize waits for the work queued on s (cudaStreamSynchronize).
func (d *Device) StreamSynchronize(s alloc.Stream) { d.b.StreamSynchronize(s) }

// Now returns the host clock: virtual time on sim and meta devices.
func (d *Device) Now() time.Duration { return d.b.Now() }

// StreamClock returns the time at which the work queued on s completes.
func (d *Device) StreamClock(s alloc.Stream) time.Duration { return d.b.StreamClock(s) }

// Launch queues the modelled cost of k on s (see the package documentation).
func (d *Device) Launch(s alloc.Stream, k Kernel) { d.b.Launch(s, k) }

// Event is a recorded point in a stream's work, like a CUDA event.
type Event struct {
	e backend.Event
}

// RecordEvent records an event at the end of the work queued on s so far.
func (d *Device) RecordEvent(s alloc.Stream) *Event {
	return &Event{e: d.b.RecordEvent(s).(backend.Event)}
}

// WaitEvent makes work queued on s after this call wait for e
// (cudaStreamWaitEvent).
func (d *Device) WaitEvent(s alloc.Stream, e *Event) { d.b.WaitEvent(s, e.e) }

// Synchronize waits until the event has completed.
func (e *Event) Synchronize() { e.e.Synchronize() }

// Query reports whether the event has completed (cudaEventQuery); it
// makes *Event an alloc.Event.
func (e *Event) Query() bool { return e.e.Query() }

// ElapsedSince returns the time from start to e (cudaEventElapsedTime).
func (e *Event) ElapsedSince(start *Event) time.Duration { return e.e.ElapsedSince(start.e) }

// ---- copies ---------------------------------------------------------------

func checkRange(d *Device, op string, b *alloc.Block, off, n int64) error {
	if b == nil {
		return fmt.Errorf("device: %s: %s: nil block", d.Name(), op)
	}
	if off < 0 || n < 0 || off > b.Size() || n > b.Size()-off {
		return fmt.Errorf("device: %s: %s: range [%d, %d) is outside the block of %d bytes at 0x%x",
			d.Name(), op, off, off+n, b.Size(), b.Addr())
	}
	return nil
}

// memoryOf returns the backend a block lives on: the memory of the
// allocator that handed it out. Addresses alone cannot tell, since devices
// made with New may use the same addresses as an open device.
func (d *Device) memoryOf(op string, b *alloc.Block) (Backend, error) {
	bk, ok := b.Allocator().Memory().(Backend)
	if !ok {
		return nil, fmt.Errorf("device: %s: %s: block at 0x%x does not belong to a gpukit device", d.Name(), op, b.Addr())
	}
	if b.Freed() || !bk.Owns(b.Addr(), b.Size()) {
		return nil, fmt.Errorf("device: %s: %s: block at 0x%x on %s was freed; copies need live memory", d.Name(), op, b.Addr(), bk.Name())
	}
	return bk, nil
}

// onThisDevice checks that b is live memory of d.
func (d *Device) onThisDevice(op string, b *alloc.Block) error {
	bk, err := d.memoryOf(op, b)
	if err != nil {
		return err
	}
	if bk != d.b {
		return fmt.Errorf("device: %s: %s: block at 0x%x is on %s, not on this device", d.Name(), op, b.Addr(), bk.Name())
	}
	return nil
}

// CopyToDevice copies src into dst at byte offset dstOff, on stream s.
// Pinned says whether src is page-locked. Only a pinned copy can be
// asynchronous: a pageable copy blocks the host even when async is set.
func (d *Device) CopyToDevice(dst *alloc.Block, dstOff int64, src []byte, pinned bool, s alloc.Stream, async bool) error {
	n := int64(len(src))
	if err := checkRange(d, "CopyToDevice", dst, dstOff, n); err != nil {
		return err
	}
	if err := d.onThisDevice("CopyToDevice", dst); err != nil {
		return err
	}
	return d.b.CopyHtoD(dst.Addr()+uint64(dstOff), src, pinned, s, async)
}

// CopyToHost copies len(dst) bytes of src from byte offset srcOff into dst,
// on stream s, with the same rules as CopyToDevice. An asynchronous copy is
// complete, as far as the clock goes, once s is synchronized.
func (d *Device) CopyToHost(dst []byte, src *alloc.Block, srcOff int64, pinned bool, s alloc.Stream, async bool) error {
	n := int64(len(dst))
	if err := checkRange(d, "CopyToHost", src, srcOff, n); err != nil {
		return err
	}
	if err := d.onThisDevice("CopyToHost", src); err != nil {
		return err
	}
	return d.b.CopyDtoH(dst, src.Addr()+uint64(srcOff), pinned, s, async)
}

// CopyDevice copies n bytes from src at srcOff to dst at dstOff,
// asynchronously on stream s of d. The blocks may live on other devices
// (a peer copy, charged at the peer bandwidth of d's profile).
func (d *Device) CopyDevice(dst *alloc.Block, dstOff int64, src *alloc.Block, srcOff int64, n int64, s alloc.Stream) error {
	if err := checkRange(d, "CopyDevice destination", dst, dstOff, n); err != nil {
		return err
	}
	if err := checkRange(d, "CopyDevice source", src, srcOff, n); err != nil {
		return err
	}
	db, err := d.memoryOf("CopyDevice destination", dst)
	if err != nil {
		return err
	}
	sb, err := d.memoryOf("CopyDevice source", src)
	if err != nil {
		return err
	}
	da, sa := dst.Addr()+uint64(dstOff), src.Addr()+uint64(srcOff)
	if db == d.b && sb == d.b {
		return d.b.CopyDtoD(da, sa, n, s)
	}
	return d.b.CopyPeer(da, db, sa, sb, n, s)
}

// ---- allocator pass-throughs ---------------------------------------------

// MemoryAllocated is torch.cuda.memory_allocated: bytes in allocated blocks.
func (d *Device) MemoryAllocated() int64 { return d.a.MemoryAllocated() }

// MaxMemoryAllocated is the peak of MemoryAllocated since the last reset.
func (d *Device) MaxMemoryAllocated() int64 { return d.a.MaxMemoryAllocated() }

// MemoryReserved is torch.cuda.memory_reserved: bytes in segments.
func (d *Device) MemoryReserved() int64 { return d.a.MemoryReserved() }

// MaxMemoryReserved is the peak of MemoryReserved since the last reset.
func (d *Device) MaxMemoryReserved() int64 { return d.a.MaxMemoryReserved() }

// ResetPeakStats resets the peaks (torch.cuda.reset_peak_memory_stats).
func (d *Device) ResetPeakStats() { d.a.ResetPeakStats() }

// EmptyCache releases the segments that are entirely free
// (torch.cuda.empty_cache); each raw free synchronizes the device. It
// panics only if the backend fails to free; TryEmptyCache returns that.
func (d *Device) EmptyCache() { d.a.EmptyCache() }

// TryEmptyCache is EmptyCache returning a failed raw free as an error
// (alloc.Allocator.TryEmptyCache): what was not freed stays reserved.
func (d *Device) TryEmptyCache() error { return d.a.TryEmptyCache() }

// SetMemoryFraction limits the allocator to a fraction of the capacity
// (torch.cuda.set_per_process_memory_fraction).
func (d *Device) SetMemoryFraction(f float64) error { return d.a.SetMemoryFraction(f) }

// Stats returns the allocator statistics under PyTorch's key names.
func (d *Device) Stats() map[string]int64 { return d.a.Stats() }

// Summary returns the allocator's memory summary table.
func (d *Device) Summary() string { return d.a.Summary() }

// Snapshot returns the allocator's snapshot (torch.cuda.memory._snapshot()).
func (d *Device) Snapshot() alloc.Snapshot { return d.a.Snapshot() }
