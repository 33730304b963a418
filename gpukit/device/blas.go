package device

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"

	"github.com/gpumem/course/gpukit/alloc"
)

// The cuBLAS workspace, as PyTorch allocates it.
//
// PyTorch does not let cuBLAS allocate its own scratch memory: the first
// time a matrix product takes the cuBLAS handle on a stream
// (getCurrentCUDABlasHandle, then setWorkspaceForHandle in
// aten/src/ATen/cuda/CublasHandlePool.cpp), it allocates a workspace from
// the CUDA caching allocator, hands it to cublasSetWorkspace, and keeps it
// for that handle and stream until the workspaces are cleared
// (torch._C._cuda_clearCublasWorkspaces, or the end of the process). So on
// a real card memory_allocated() grows by the workspace at the first
// product on each stream, and torch.cuda.empty_cache() does not give it
// back. gpukit has one handle per device, so one workspace per stream.
//
// Its size is parseChosenWorkspaceSize's: CUBLAS_WORKSPACE_CONFIG, a list
// of :SIZE:COUNT pairs (SIZE in KiB) that add up, or by default
// ":4096:2:16:8" (8 MiB + 128 KiB), and 32 MiB on cards of compute
// capability 9.0 (sm90: Hopper; PyTorch tests major == 9 && minor == 0, and
// 9.0 is the only 9.x there is, so gpukit tests the major number; Blackwell,
// 10.x and 12.x, gets the default). ":0:0" turns it off. It is on by
// default, as in PyTorch.
//
// A meta device has none: PyTorch's meta device runs no kernel and takes no
// cuBLAS handle, so there is nothing to hold a workspace for.
//
// Differences from PyTorch: a value with no :SIZE:COUNT pair is an error
// when the device is opened (PyTorch warns and uses the default); and
// cuBLASLt's separate workspace (CUBLASLT_WORKSPACE_SIZE, taken by the
// products PyTorch sends to cuBLASLt) is not modelled.

// CublasWorkspaceEnvVar is the environment variable that sizes the
// workspace, PyTorch's (and cuBLAS's) CUBLAS_WORKSPACE_CONFIG.
const CublasWorkspaceEnvVar = "CUBLAS_WORKSPACE_CONFIG"

var workspacePair = regexp.MustCompile(`:([0-9]+):([0-9]+)`)

// CublasWorkspaceSize returns the bytes of the workspace PyTorch allocates
// for each cuBLAS handle and stream on a card of compute capability
// computeMajor (0 when unknown, taken as not Hopper), given the value of
// CUBLAS_WORKSPACE_CONFIG ("" when unset).
func CublasWorkspaceSize(config string, computeMajor int) (int64, error) {
	if config == "" {
		if computeMajor == 9 {
			return 4096 * 8 * KiB, nil
		}
		return 4096*KiB*2 + 16*KiB*8, nil
	}
	pairs := workspacePair.FindAllStringSubmatch(config, -1)
	if len(pairs) == 0 {
		return 0, fmt.Errorf("%s=%q: no :SIZE:COUNT pair (SIZE in KiB), such as :4096:8; \":0:0\" turns the workspace off", CublasWorkspaceEnvVar, config)
	}
	var total int64
	for _, p := range pairs {
		size, err1 := strconv.ParseInt(p[1], 10, 64)
		count, err2 := strconv.ParseInt(p[2], 10, 64)
		if err1 != nil || err2 != nil || size > math.MaxInt64/KiB ||
			(count != 0 && size*KiB > (alloc.MaxRequest-total)/count) {
			return 0, fmt.Errorf("%s=%q: workspace too large (at most %d bytes)", CublasWorkspaceEnvVar, config, alloc.MaxRequest)
		}
		total += size * KiB * count
	}
	return total, nil
}

// WithCublasWorkspaceConfig sizes the device's cuBLAS workspace as
// CUBLAS_WORKSPACE_CONFIG would: "" is PyTorch's default for the card,
// ":0:0" turns it off. Without this option the environment variable
// applies, and without either PyTorch's default for the card.
func WithCublasWorkspaceConfig(config string) Option {
	return func(o *options) { o.workspace = &config }
}

// workspaceSize is the device's workspace size from its options, the
// environment and its profile: none on a meta device. The configuration is
// checked on every kind, so that a wrong value fails where it is set.
func workspaceSize(o options, b Backend) (int64, error) {
	config := os.Getenv(CublasWorkspaceEnvVar)
	if o.workspace != nil {
		config = *o.workspace
	}
	size, err := CublasWorkspaceSize(config, b.Profile().ComputeMajor)
	if err != nil || b.Kind() == Meta {
		return 0, err
	}
	return size, nil
}

// BlasWorkspace gives stream s its cuBLAS workspace, through the caching
// allocator, unless it has one: gpukit's matrix products call it before
// their kernel, as PyTorch's do when they take the cuBLAS handle. It fails
// only when the allocation does (out of memory), and then allocates
// nothing.
func (d *Device) BlasWorkspace(s alloc.Stream) error {
	if d.wsSize == 0 {
		return nil
	}
	d.wsMu.Lock()
	defer d.wsMu.Unlock()
	if d.ws[s] != nil {
		return nil
	}
	b, err := d.Malloc(d.wsSize, s)
	if err != nil {
		return err
	}
	if d.ws == nil {
		d.ws = map[alloc.Stream]*alloc.Block{}
	}
	d.ws[s] = b
	return nil
}

// ClearBlasWorkspaces frees every stream's cuBLAS workspace
// (torch._C._cuda_clearCublasWorkspaces); the next product on a stream
// allocates its workspace again.
func (d *Device) ClearBlasWorkspaces() {
	d.wsMu.Lock()
	defer d.wsMu.Unlock()
	for s, b := range d.ws {
		d.Free(b)
		delete(d.ws, s)
	}
}
