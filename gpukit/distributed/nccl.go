package distributed

import (
	"fmt"
	"strings"
)

// NCCL's own buffers: device memory outside the caching allocator.
//
// A communicator connects each rank to its peers once per channel (one
// of NCCL's rings, "Nodes" in the package documentation), and every
// connection gets a buffer for each of NCCL's three protocols: Simple,
// NCCL_BUFFSIZE bytes (4 MiB by default), LL and LL128 (their defaults
// are derived from the kernels' thread counts). NCCL takes them from the
// driver (cudaMalloc or cuMem*), not from PyTorch's allocator, so they
// appear in nvidia-smi and cudaMemGetInfo but never in
// torch.cuda.memory_allocated() or memory_reserved(). Sources, NVIDIA/nccl:
// DEFAULT_BUFFSIZE, DEFAULT_LL_BUFFSIZE, DEFAULT_LL128_BUFFSIZE and
// computeBuffSizes in src/init.cc; NCCL_LL_LINES_PER_THREAD,
// NCCL_LL_MAX_NTHREADS, NCCL_LL128_ELEMS_PER_THREAD,
// NCCL_LL128_MAX_NTHREADS and NCCL_STEPS in src/include/device.h; the
// NCCL_BUFFSIZE, NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS entries of
// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html.
//
// Modelled: one connection per channel and rank, the ring's (each rank
// receives from the rank before it; whether a buffer sits on the
// receiving or the sending card, each card holds one set per channel).
// Not modelled: the tree's connections, NVLS (NVLink SHARP) buffers on
// NVSwitch systems, CollNet, the small head/tail structures and host
// memory, NCCL's lazy connection of algorithms it has not used yet
// (NCCL_RUNTIME_CONNECT) and the 1 MiB Simple default on ARM hosts. The
// channel count is NCCL's choice (its topology search, bounded by
// NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS), so it is an input here.
const (
	// DefaultNCCLBuffSize is NCCL_BUFFSIZE's default, the Simple
	// protocol's buffer per connection: DEFAULT_BUFFSIZE = 1 << 22.
	DefaultNCCLBuffSize = 1 << 22
	// DefaultNCCLLLBuffSize is the LL protocol's buffer per connection:
	// NCCL_LL_LINES_PER_THREAD (8) · NCCL_LL_MAX_NTHREADS (512) ·
	// NCCL_STEPS (8) · sizeof(union ncclLLFifoLine) (16) = 512 KiB.
	DefaultNCCLLLBuffSize = 8 * 512 * 8 * 16
	// DefaultNCCLLL128BuffSize is the LL128 protocol's:
	// NCCL_LL128_ELEMS_PER_THREAD (120) · NCCL_LL128_MAX_NTHREADS (640) ·
	// NCCL_STEPS (8) · sizeof(uint64_t) (8) = 4 915 200 bytes.
	DefaultNCCLLL128BuffSize = 120 * 640 * 8 * 8
	// maxNCCLChannels is MAXCHANNELS in src/include/device.h.
	maxNCCLChannels = 64
)

// NCCLBuffers describes the buffers NCCL allocates on every card of a
// group for its connections (WithNCCLBuffers).
type NCCLBuffers struct {
	// Channels is how many channels (rings) NCCL opens, 1 to 64; its
	// topology search picks it, NCCL_MIN_NCHANNELS and
	// NCCL_MAX_NCHANNELS bound it.
	Channels int
	// Simple, LL and LL128 are each connection's buffer per protocol in
	// bytes (NCCL_BUFFSIZE, NCCL_LL_BUFFSIZE, NCCL_LL128_BUFFSIZE); 0
	// takes NCCL's default.
	Simple, LL, LL128 int64
}

// PerConnection is the bytes one connection holds, defaults filled in.
func (b NCCLBuffers) PerConnection() int64 {
	b = b.withDefaults()
	return b.Simple + b.LL + b.LL128
}

func (b NCCLBuffers) withDefaults() NCCLBuffers {
	if b.Simple == 0 {
		b.Simple = DefaultNCCLBuffSize
	}
	if b.LL == 0 {
		b.LL = DefaultNCCLLLBuffSize
	}
	if b.LL128 == 0 {
		b.LL128 = DefaultNCCLLL128BuffSize
	}
	return b
}

func (b NCCLBuffers) check() error {
	switch {
	case b.Channels < 1 || b.Channels > maxNCCLChannels:
		return fmt.Errorf("NCCL channels %d must be between 1 and %d (MAXCHANNELS)", b.Channels, maxNCCLChannels)
	case b.Simple < 0 || b.LL < 0 || b.LL128 < 0:
		return fmt.Errorf("NCCL buffer sizes %d, %d, %d must be positive (0: NCCL's defaults)", b.Simple, b.LL, b.LL128)
	}
	return nil
}

// WithNCCLBuffers makes NewGroup reserve, on every card, the buffers
// NCCL's communicator would hold: b.Channels connections of
// b.PerConnection() bytes each (none in a group of one card, which has
// no peer). They are raw device memory outside the caching allocator,
// as NCCL's are outside PyTorch's: the allocator's statistics do not
// count them, MemInfo does, and the allocator has that much less room.
// Group.NCCLBytes reports them; Group.Close frees them.
func WithNCCLBuffers(b NCCLBuffers) GroupOption {
	return func(o *groupOptions) { o.nccl = &b }
}

// reserveNCCL takes each rank's buffers from its card, past the
// allocator (the backend's raw Malloc, as NCCL's cudaMalloc).
func (g *Group) reserveNCCL(b NCCLBuffers) error {
	if err := b.check(); err != nil {
		return errorf("NewGroup: %v", err)
	}
	if len(g.devs) == 1 {
		return nil
	}
	size := int64(b.Channels) * b.PerConnection()
	for r, d := range g.devs {
		addr, err := d.Backend().Malloc(size)
		if err != nil {
			g.Close()
			return errorf("NewGroup: rank %d's NCCL buffers (%d channels of %d bytes): %s",
				r, b.Channels, b.PerConnection(), strings.TrimPrefix(err.Error(), "sim: "))
		}
		g.ncclAddr = append(g.ncclAddr, addr)
	}
	g.ncclBytes = size
	return nil
}

// NCCLBytes is the device memory NCCL's buffers hold on each card
// (WithNCCLBuffers; 0 without, or after Close). The caching allocator
// does not count it; the card's MemInfo, like nvidia-smi, does.
func (g *Group) NCCLBytes() int64 { return g.ncclBytes }

// Close frees the NCCL buffers on every card
// (torch.distributed.destroy_process_group). The group's collectives
// still run afterwards; only the buffers' memory is gone. Closing twice
// does nothing.
func (g *Group) Close() {
	for r, addr := range g.ncclAddr {
		// A free of a segment the group reserved cannot fail; an error
		// here is a broken invariant, not misuse.
		if err := g.devs[r].Backend().Free(addr); err != nil {
			panic("distributed: freeing NCCL buffers: " + err.Error())
		}
	}
	g.ncclAddr, g.ncclBytes = nil, 0
}
