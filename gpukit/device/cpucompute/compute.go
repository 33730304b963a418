package cpucompute

import (
	"fmt"
	"unsafe"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/internal/isnil"
	"github.com/gpumem/course/gpukit/kernels"
)

// Memory resolves device addresses to host bytes.
type Memory interface {
	// Bytes returns the n bytes at addr (length n), or nil when
	// [addr, addr+n) is not memory that the host can reach.
	Bytes(addr uint64, n int64) []byte
}

// Compute is backend.Compute on the CPU over a Memory. It is safe for
// concurrent use when its Memory is.
type Compute struct {
	name string
	mem  Memory
}

var _ backend.Compute = (*Compute)(nil)

// New returns the CPU Compute of the device called name ("sim:0", "cpu"),
// whose addresses mem resolves. A nil mem is refused at once.
func New(name string, mem Memory) *Compute {
	if isnil.Nil(mem) {
		panic("cpucompute: New: nil Memory for " + name)
	}
	return &Compute{name: name, mem: mem}
}

// Capabilities is every method in every dtype of its domain, but Adam:
// float32 and float64 only (see the package doc).
func (c *Compute) Capabilities() backend.Capabilities {
	caps := backend.Domain()
	caps["Adam"] = []dtypes.Dtype{f32t, f64t}
	return caps
}

const (
	f32t = dtypes.Float32
	f64t = dtypes.Float64
)

// operand is a resolved Strided operand: data starts at its first element.
type operand struct {
	data    []byte
	dt      dtypes.Dtype
	strides []int
}

func (o operand) s32() kernels.Strided[float32] {
	return kernels.Strided[float32]{Data: kernels.Float32s(o.data), Strides: o.strides}
}

func (o operand) s64() kernels.Strided[float64] {
	return kernels.Strided[float64]{Data: kernels.Float64s(o.data), Strides: o.strides}
}

func numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// extent is the number of elements from the first to the last one that
// shape and strides address (0 for an empty shape).
func extent(shape, strides []int) int {
	if numel(shape) == 0 {
		return 0
	}
	e := 1
	for d, s := range shape {
		e += (s - 1) * strides[d]
	}
	return e
}

// bytes resolves n elements of dt at addr; n == 0 gives nil.
func (c *Compute) bytes(op string, addr uint64, dt dtypes.Dtype, n int) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	nb := int64(n) * int64(dt.Size())
	if addr == 0 {
		return nil, fmt.Errorf("cpucompute: %s on %s: operand of %d bytes at address 0", op, c.name, nb)
	}
	b := c.mem.Bytes(addr, nb)
	if b == nil {
		return nil, fmt.Errorf("cpucompute: %s on %s: [%#x, +%d) is not memory of this device", op, c.name, addr, nb)
	}
	return b, nil
}

// opt resolves an optional contiguous array (addr 0: absent, nil).
func (c *Compute) opt(op string, addr uint64, dt dtypes.Dtype, n int) ([]byte, error) {
	if addr == 0 {
		return nil, nil
	}
	return c.bytes(op, addr, dt, n)
}

// strided resolves s over shape.
func (c *Compute) strided(op string, shape []int, s backend.Strided) (operand, error) {
	if len(s.Strides) != len(shape) {
		return operand{}, fmt.Errorf("cpucompute: %s on %s: %d strides for a %d-d shape", op, c.name, len(s.Strides), len(shape))
	}
	for _, st := range s.Strides {
		if st < 0 {
			return operand{}, fmt.Errorf("cpucompute: %s on %s: negative stride %d", op, c.name, st)
		}
	}
	b, err := c.bytes(op, s.Addr, s.Dtype, extent(shape, s.Strides))
	return operand{data: b, dt: s.Dtype, strides: s.Strides}, err
}

// stridedAll resolves up to four operands over one shape (an array, so
// that a call allocates nothing for them).
func (c *Compute) stridedAll(op string, shape []int, ss ...backend.Strided) ([4]operand, error) {
	var out [4]operand
	for i, s := range ss {
		o, err := c.strided(op, shape, s)
		if err != nil {
			return out, err
		}
		out[i] = o
	}
	return out, nil
}

// hasBroadcast reports whether strides read some element more than once.
func hasBroadcast(shape, strides []int) bool {
	for d, s := range strides {
		if s == 0 && shape[d] > 1 {
			return true
		}
	}
	return false
}

// overlap reports whether two byte ranges share memory.
func overlap(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}

// computeIn32 reports whether the generic loops compute dt in float32
// (float32 and the half types) rather than float64.
func computeIn32(dt dtypes.Dtype) bool {
	return dt == f32t || dt == dtypes.Float16 || dt == dtypes.BFloat16
}

func isHalf(dt dtypes.Dtype) bool { return dt == dtypes.Float16 || dt == dtypes.BFloat16 }
