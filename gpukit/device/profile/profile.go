package profile

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Byte and rate units used by the profiles. Bandwidths are in bytes per
// second and rates in floating-point operations per second, decimal (GB/s,
// TFLOPS) as vendors publish them; capacities are binary (GiB).
const (
	KiB = int64(1) << 10
	MiB = int64(1) << 20
	GiB = int64(1) << 30

	GBps   = 1e9  // bytes per second
	TFLOPS = 1e12 // floating-point operations per second
)

// Kernel describes the cost of a kernel: how many floating-point operations
// it performs and how many bytes it moves through device memory. Half selects
// the FP16 (tensor core) rate instead of the FP32 rate.
type Kernel struct {
	Name  string
	Flops int64
	Bytes int64
	Half  bool
}

// Profile carries the figures of a card that the sim backend's cost model
// uses. See the package documentation of gpukit/device for the formulas and
// for where each figure comes from.
type Profile struct {
	Name        string // lookup name, e.g. "t4"
	Description string // the card, e.g. "NVIDIA T4 (Turing, 16 GB GDDR6)"

	Capacity int64 // device memory in bytes

	// ContextSize is the device memory a process loses before its first
	// tensor: the CUDA context (driver code, per-SM local memory, heaps)
	// and what the driver keeps for the process. It counts as used in
	// MemInfo, as non-PyTorch memory of this process in the out-of-memory
	// message, and the allocator can never reserve it.
	ContextSize int64
	// ContextSource says where ContextSize comes from.
	ContextSource string

	HBMBandwidth  float64 // device memory bandwidth, bytes/s
	PCIePinned    float64 // host<->device copy bandwidth from page-locked memory, bytes/s
	PCIePageable  float64 // host<->device copy bandwidth from pageable memory, bytes/s
	PeerBandwidth float64 // device<->device copy bandwidth between two cards over PCIe, bytes/s
	// NVLink is the peer-to-peer link's bandwidth per direction, bytes/s,
	// for a card that has one (0: none). A copy between two cards uses it
	// when both have it (PeerPath).
	NVLink float64

	FP32 float64 // FP32 rate, FLOP/s
	FP16 float64 // FP16 tensor-core rate (dense), FLOP/s

	// ComputeMajor is the major number of the card's compute capability
	// (7 Turing, 8 Ampere, 9 Hopper; 0 unknown). PyTorch sizes its default
	// cuBLAS workspace by it (device.CublasWorkspaceSize).
	ComputeMajor int

	LaunchOverhead time.Duration // host cost of queuing a kernel or async copy
	MallocLatency  time.Duration // fixed cost of a raw device malloc (cudaMalloc)
	MallocPerGiB   time.Duration // extra cost of a raw malloc per GiB requested
	FreeLatency    time.Duration // cost of a raw free after it has synchronized the device

	Source string // where the figures come from
}

// MallocCost is the modelled host time of a raw device malloc of size bytes:
// MallocLatency + MallocPerGiB * size/GiB.
func (p Profile) MallocCost(size int64) time.Duration {
	return p.MallocLatency + Seconds(float64(size)/float64(GiB)*p.MallocPerGiB.Seconds())
}

// KernelCost is the modelled duration of k on the device:
// LaunchOverhead + max(Flops/rate, Bytes/HBMBandwidth), where rate is FP16
// when k.Half and FP32 otherwise.
func (p Profile) KernelCost(k Kernel) time.Duration {
	rate := p.FP32
	if k.Half {
		rate = p.FP16
	}
	var compute, memory float64
	if rate > 0 {
		compute = float64(k.Flops) / rate
	}
	if p.HBMBandwidth > 0 {
		memory = float64(k.Bytes) / p.HBMBandwidth
	}
	return p.LaunchOverhead + Seconds(math.Max(compute, memory))
}

// CopyCost is the modelled duration of a host<->device copy of n bytes:
// LaunchOverhead + n/PCIePinned, or n/PCIePageable when not pinned.
func (p Profile) CopyCost(n int64, pinned bool) time.Duration {
	bw := p.PCIePageable
	if pinned {
		bw = p.PCIePinned
	}
	return p.LaunchOverhead + Seconds(float64(n)/bw)
}

// DeviceCopyCost is the modelled duration of a copy of n bytes within one
// device: it reads and writes n bytes, LaunchOverhead + 2n/HBMBandwidth.
func (p Profile) DeviceCopyCost(n int64) time.Duration {
	return p.LaunchOverhead + Seconds(2*float64(n)/p.HBMBandwidth)
}

// PeerCopyCost is the modelled duration of a copy of n bytes between two
// devices of this profile over PCIe: LaunchOverhead + n/PeerBandwidth.
// PeerCopyTime gives the cost on the path two cards actually use.
func (p Profile) PeerCopyCost(n int64) time.Duration {
	return p.LaunchOverhead + Seconds(float64(n)/p.PeerBandwidth)
}

// Peer links between two cards.
const (
	LinkPCIe   = "PCIe"
	LinkNVLink = "NVLink"
)

// PeerPath is the link a copy from a card of profile src to one of
// profile dst takes, and its bandwidth: NVLink when both cards have it,
// at the slower card's rate; PCIe otherwise, at the slower card's
// PeerBandwidth.
func PeerPath(src, dst Profile) (link string, bandwidth float64) {
	if src.NVLink > 0 && dst.NVLink > 0 {
		return LinkNVLink, min(src.NVLink, dst.NVLink)
	}
	return LinkPCIe, min(src.PeerBandwidth, dst.PeerBandwidth)
}

// PeerCopyTime is the modelled duration of a copy of n bytes from a card
// of profile src to one of profile dst, queued on a card of profile p:
// p.LaunchOverhead + n/bandwidth of PeerPath(src, dst).
func (p Profile) PeerCopyTime(src, dst Profile, n int64) time.Duration {
	_, bw := PeerPath(src, dst)
	return p.LaunchOverhead + Seconds(float64(n)/bw)
}

// Resized returns a made-up card like p with capacity bytes of device
// memory and no context: all of its memory is the allocator's. Tests and
// exercises use it to make out-of-memory errors happen at sizes they
// choose. The real card's context is dropped rather than kept, because it
// can be larger than the small card asked for, and rather than scaled,
// because a context does not shrink with memory size (it grows with the
// SM count). Validate still checks the capacity.
func (p Profile) Resized(capacity int64) Profile {
	p.Capacity = capacity
	p.ContextSize = 0
	p.ContextSource = "none: a made-up card resized from " + p.Name
	return p
}

// Validate reports a profile whose figures cannot drive the model.
func (p Profile) Validate() error {
	switch {
	case p.Name == "":
		return fmt.Errorf("profile: profile has no name")
	case p.Capacity <= 0:
		return fmt.Errorf("profile: profile %q: capacity %d must be positive", p.Name, p.Capacity)
	case p.ContextSize < 0 || p.ContextSize >= p.Capacity:
		return fmt.Errorf("profile: profile %q: context size %d must be at least 0 and below the capacity %d (for a smaller made-up card, use Profile.Resized)", p.Name, p.ContextSize, p.Capacity)
	case p.HBMBandwidth <= 0 || p.PCIePinned <= 0 || p.PCIePageable <= 0 || p.PeerBandwidth <= 0:
		return fmt.Errorf("profile: profile %q: bandwidths must be positive", p.Name)
	case p.NVLink < 0 || math.IsNaN(p.NVLink):
		return fmt.Errorf("profile: profile %q: NVLink bandwidth %v must be 0 (none) or positive", p.Name, p.NVLink)
	case p.FP32 <= 0 || p.FP16 <= 0:
		return fmt.Errorf("profile: profile %q: FP32 and FP16 rates must be positive", p.Name)
	case p.LaunchOverhead < 0 || p.MallocLatency < 0 || p.MallocPerGiB < 0 || p.FreeLatency < 0:
		return fmt.Errorf("profile: profile %q: latencies must not be negative", p.Name)
	}
	return nil
}

// Seconds converts seconds to a Duration, rounded to the nanosecond.
func Seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// PCIe link rates per direction for an x16 link, from the PCI-SIG base
// specifications: 8 GT/s (3.0), 16 GT/s (4.0) and 32 GT/s (5.0) per lane with
// 128b/130b encoding, times 16 lanes.
const (
	pcie3x16 = 15.75 * GBps
	pcie4x16 = 31.5 * GBps
	pcie5x16 = 63.0 * GBps
)

// Modelled, not published: copies from pinned memory reach about 80% of the
// link rate (what CUDA's bandwidthTest sample typically shows); pageable
// copies are staged by the driver through a pinned buffer and a CPU memcpy
// and reach about 40% of the pinned figure.
const (
	pinnedShare   = 0.80
	pageableShare = 0.40
)

// Modelled, not published: kernel launch overhead of 5 µs (typical of the
// measured 3-10 µs), cudaMalloc of 20 µs plus 40 µs per GiB, cudaFree of 15 µs
// after the device synchronization it implies.
const (
	launchOverhead = 5 * time.Microsecond
	mallocLatency  = 20 * time.Microsecond
	mallocPerGiB   = 40 * time.Microsecond
	freeLatency    = 15 * time.Microsecond
)

// NVLink bandwidths per direction. NVIDIA's datasheets give the total of
// both directions: "NVLink: 600GB/s" for the A100 (SXM, and the PCIe card
// with an NVLink bridge: 12 third-generation links of 50 GB/s, 25 GB/s each
// way) and "NVLink: 900GB/s" for the H100 SXM (18 fourth-generation
// links). A copy moves data one way, at half that. Modelled at the full
// link rate, without the share PCIe copies lose (an upper bound).
const (
	nvlinkA100 = 600 * GBps / 2
	nvlinkH100 = 900 * GBps / 2
)

// Context sizes. NVML reports a process's device memory, and PyTorch's
// out-of-memory message prints it ("Including non-PyTorch memory, this
// process has X memory in use"); X minus the allocated and the
// reserved-but-unallocated memory of the same message is what the process
// holds outside the allocator: the CUDA context, and after some work the
// kernels loaded lazily and the libraries' handles (not cuBLAS's workspace,
// which PyTorch allocates through the caching allocator). Two published
// messages give:
//
//   - an 80 GB-class card (79.14 GiB total): 17.37 − 14.34 − 2.53 GiB =
//     0.50 GiB (github.com/Kwai-Keye/Keye/issues/11);
//   - a 16 GB-class card (15.70 GiB total): 15.48 − 14.81 GiB − 336.73 MiB
//     ≈ 349 MiB (github.com/qingze-bai/VSmTrans/issues/3).
//
// The CUDA context grows with the number of SMs (each gets local memory and
// stacks), so the 40 GB A100 (108 SMs) is put between the two and the small
// made-up classroom card below both.
const (
	contextH100      = 512 * MiB
	contextT4        = 350 * MiB
	contextA100      = 448 * MiB
	contextClassroom = 128 * MiB
)

func pcieProfile(p Profile, link float64) Profile {
	p.PCIePinned = link * pinnedShare
	p.PCIePageable = link * pinnedShare * pageableShare
	p.PeerBandwidth = p.PCIePinned // peer copies over PCIe, unless both cards have NVLink
	p.LaunchOverhead = launchOverhead
	p.MallocLatency = mallocLatency
	p.MallocPerGiB = mallocPerGiB
	p.FreeLatency = freeLatency
	return p
}

var profiles = []Profile{
	pcieProfile(Profile{
		Name:        "classroom",
		Description: "classroom card (made up: 2 GiB, modest but plausible figures, like an entry-level PCIe 3.0 card)",
		Capacity:    2 * GiB,
		ContextSize: contextClassroom,
		ContextSource: "estimate: below the ~349 MiB measured on a 16 GB-class card, since a small card has few SMs; " +
			"kept small enough that the lessons' 2 GiB examples still fit",
		HBMBandwidth: 112 * GBps,
		FP32:         2 * TFLOPS,
		FP16:         4 * TFLOPS,
		ComputeMajor: 7,
		Source:       "made up for the course, chosen to be plausible for an entry-level card and small enough that OOM is easy to reach; PCIe 3.0 x16 link",
	}, pcie3x16),
	pcieProfile(Profile{
		Name:          "t4",
		Description:   "NVIDIA T4 (Turing, 16 GB GDDR6, PCIe 3.0 x16)",
		Capacity:      16 * GiB,
		ContextSize:   contextT4,
		ContextSource: "measured on a 16 GB-class card from a published out-of-memory message (github.com/qingze-bai/VSmTrans/issues/3): ~349 MiB outside the allocator",
		HBMBandwidth:  320 * GBps,
		FP32:          8.1 * TFLOPS,
		FP16:          65 * TFLOPS,
		ComputeMajor:  7,
		Source:        "NVIDIA T4 datasheet: 16 GB GDDR6, 320 GB/s, PCIe 3.0 x16, FP32 8.1 TFLOPS, mixed precision FP16/FP32 65 TFLOPS",
	}, pcie3x16),
	pcieProfile(Profile{
		Name:          "a100-40gb",
		Description:   "NVIDIA A100 40GB (Ampere, HBM2, PCIe 4.0 x16 host link, NVLink to its peer)",
		Capacity:      40 * GiB,
		ContextSize:   contextA100,
		ContextSource: "estimate between the measured 16 GB-class (~349 MiB) and 80 GB-class (0.50 GiB) figures, the context growing with the SM count",
		HBMBandwidth:  1555 * GBps,
		FP32:          19.5 * TFLOPS,
		FP16:          312 * TFLOPS,
		ComputeMajor:  8,
		NVLink:        nvlinkA100,
		Source:        "NVIDIA A100 datasheet: 40 GB HBM2, 1,555 GB/s, PCIe Gen4, NVLink 600 GB/s (both directions), FP32 19.5 TFLOPS, FP16 Tensor Core 312 TFLOPS (dense)",
	}, pcie4x16),
	pcieProfile(Profile{
		Name:          "h100-80gb",
		Description:   "NVIDIA H100 SXM 80GB (Hopper, HBM3, PCIe 5.0 x16 host link, NVLink to its peer)",
		Capacity:      80 * GiB,
		ContextSize:   contextH100,
		ContextSource: "measured on an 80 GB-class card from a published out-of-memory message (github.com/Kwai-Keye/Keye/issues/11): 0.50 GiB outside the allocator",
		HBMBandwidth:  3350 * GBps,
		FP32:          67 * TFLOPS,
		FP16:          989 * TFLOPS,
		ComputeMajor:  9,
		NVLink:        nvlinkH100,
		Source:        "NVIDIA H100 datasheet (SXM): 80 GB HBM3, 3.35 TB/s, PCIe Gen5, NVLink 900 GB/s (both directions), FP32 67 TFLOPS, FP16 Tensor Core 989 TFLOPS (dense; 1,979 with sparsity)",
	}, pcie5x16),
}

// Profiles returns the built-in profiles, ordered by capacity.
func Profiles() []Profile {
	out := append([]Profile(nil), profiles...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Capacity < out[j].Capacity })
	return out
}

// LookupProfile returns the built-in profile called name (case-insensitive).
func LookupProfile(name string) (Profile, error) {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		if strings.EqualFold(p.Name, strings.TrimSpace(name)) {
			return p, nil
		}
		names[i] = fmt.Sprintf("%q", p.Name)
	}
	return Profile{}, fmt.Errorf("profile: unknown profile %q; known profiles: %s", name, strings.Join(names, ", "))
}
