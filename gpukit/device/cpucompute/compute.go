package cpucompute

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
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

const (
	f32t = backend.Float32
	f64t = backend.Float64
)

// operand is a resolved Strided operand: data starts at its first element.
type operand struct {
	data    []byte
	dt      backend.Dtype
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
func (c *Compute) bytes(op string, addr uint64, dt backend.Dtype, n int) ([]byte, error) {
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
func (c *Compute) opt(op string, addr uint64, dt backend.Dtype, n int) ([]byte, error) {
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
func computeIn32(dt backend.Dtype) bool {
	return dt == f32t || dt == backend.Float16 || dt == backend.BFloat16
}

func isHalf(dt backend.Dtype) bool { return dt == backend.Float16 || dt == backend.BFloat16 }

// Load reads element i (in elements, not bytes) of data, of dtype d, as
// float64.
func Load(d backend.Dtype, data []byte, i int) float64 {
	switch d {
	case backend.Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
	case backend.Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
	case backend.Float16:
		return float64(kernels.Float16ToFloat32(binary.LittleEndian.Uint16(data[2*i:])))
	case backend.BFloat16:
		return float64(kernels.BFloat16ToFloat32(binary.LittleEndian.Uint16(data[2*i:])))
	case backend.Int64:
		return float64(int64(binary.LittleEndian.Uint64(data[8*i:])))
	case backend.Int32:
		return float64(int32(binary.LittleEndian.Uint32(data[4*i:])))
	case backend.Bool:
		if data[i] != 0 {
			return 1
		}
		return 0
	}
	panic(fmt.Sprintf("cpucompute: unknown %v", d))
}

// Store writes v, converted to d, at element i of data. Integer types
// truncate toward zero as a C cast does; half types round to nearest even
// from the float32 value.
func Store(d backend.Dtype, data []byte, i int, v float64) {
	switch d {
	case backend.Float32:
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(v)))
	case backend.Float64:
		binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(v))
	case backend.Float16:
		binary.LittleEndian.PutUint16(data[2*i:], kernels.Float32ToFloat16(float32(v)))
	case backend.BFloat16:
		binary.LittleEndian.PutUint16(data[2*i:], kernels.Float32ToBFloat16(float32(v)))
	case backend.Int64:
		binary.LittleEndian.PutUint64(data[8*i:], uint64(int64(v)))
	case backend.Int32:
		binary.LittleEndian.PutUint32(data[4*i:], uint32(int32(v)))
	case backend.Bool:
		if v != 0 {
			data[i] = 1
		} else {
			data[i] = 0
		}
	default:
		panic(fmt.Sprintf("cpucompute: unknown %v", d))
	}
}

// Fill sets every element of dst to v.
func (c *Compute) Fill(_ alloc.Stream, shape []int, dst backend.Strided, v float64) error {
	d, err := c.strided("Fill", shape, dst)
	if err != nil || d.data == nil {
		return err
	}
	if kernels.IsContiguous(shape, d.strides) {
		n := numel(shape)
		switch d.dt {
		case f32t:
			x := kernels.Float32s(d.data)[:n]
			for i := range x {
				x[i] = float32(v)
			}
			return nil
		case f64t:
			x := kernels.Float64s(d.data)[:n]
			for i := range x {
				x[i] = v
			}
			return nil
		}
	}
	kernels.ForEachOffset(shape, []int{0}, [][]int{d.strides}, func(_ int, o []int) {
		Store(d.dt, d.data, o[0], v)
	})
	return nil
}

// Copy copies src into dst elementwise, converting dtypes.
func (c *Compute) Copy(_ alloc.Stream, shape []int, dst, src backend.Strided) error {
	ops, err := c.stridedAll("Copy", shape, dst, src)
	if err != nil || numel(shape) == 0 {
		return err
	}
	d, s := ops[0], ops[1]
	if d.dt == s.dt {
		// A dense destination apart from a source without broadcast
		// dimensions: kernels.Copy streams rows or, for a transposed
		// source, copies in cache-blocked tiles.
		if kernels.IsContiguous(shape, d.strides) && !overlap(d.data, s.data) && !hasBroadcast(shape, s.strides) {
			n := numel(shape)
			switch d.dt {
			case f32t:
				kernels.Copy(shape, kernels.Float32s(d.data)[:n], s.s32())
				return nil
			case f64t:
				kernels.Copy(shape, kernels.Float64s(d.data)[:n], s.s64())
				return nil
			}
		}
		switch d.dt {
		case f32t:
			kernels.UnaryStrided(kernels.Identity, shape, d.s32(), s.s32())
			return nil
		case f64t:
			kernels.UnaryStrided(kernels.Identity, shape, d.s64(), s.s64())
			return nil
		}
		// Same-size raw copy for the other types: exact, no conversion.
		sz := d.dt.Size()
		kernels.ForEachOffset(shape, []int{0, 0}, [][]int{d.strides, s.strides}, func(_ int, o []int) {
			copy(d.data[o[0]*sz:o[0]*sz+sz], s.data[o[1]*sz:o[1]*sz+sz])
		})
		return nil
	}
	if s.dt == backend.Bool && kernels.IsContiguous(shape, d.strides) && kernels.IsContiguous(shape, s.strides) {
		// A mask to 1 and 0 (dropout's), without the per-element dispatch.
		n := numel(shape)
		switch d.dt {
		case f32t:
			fromBool(kernels.Float32s(d.data)[:n], s.data[:n])
			return nil
		case f64t:
			fromBool(kernels.Float64s(d.data)[:n], s.data[:n])
			return nil
		}
	}
	kernels.ForEachOffset(shape, []int{0, 0}, [][]int{d.strides, s.strides}, func(_ int, o []int) {
		Store(d.dt, d.data, o[0], Load(s.dt, s.data, o[1]))
	})
	return nil
}

// fromBool writes 1 where m is true (non-zero), else 0.
func fromBool[T float32 | float64](d []T, m []byte) {
	for i := range d {
		var v T
		if m[i] != 0 {
			v = 1
		}
		d[i] = v
	}
}

// Unary computes dst = op(src).
func (c *Compute) Unary(_ alloc.Stream, op kernels.UnaryOp, shape []int, dst, src backend.Strided) error {
	ops, err := c.stridedAll(op.String(), shape, dst, src)
	if err != nil || numel(shape) == 0 {
		return err
	}
	d, a := ops[0], ops[1]
	switch {
	case d.dt == f32t && a.dt == f32t:
		kernels.UnaryStrided(op, shape, d.s32(), a.s32())
	case d.dt == f64t && a.dt == f64t:
		kernels.UnaryStrided(op, shape, d.s64(), a.s64())
	case halfUnary(op, shape, d, a):
	default:
		f32 := computeIn32(d.dt)
		kernels.ForEachOffset(shape, []int{0, 0}, [][]int{d.strides, a.strides}, func(_ int, o []int) {
			x := Load(a.dt, a.data, o[1])
			var r float64
			if f32 {
				r = float64(kernels.ApplyUnary(op, float32(x)))
			} else {
				r = kernels.ApplyUnary(op, x)
			}
			Store(d.dt, d.data, o[0], r)
		})
	}
	return nil
}

// Binary computes dst = op(a, b).
func (c *Compute) Binary(_ alloc.Stream, op kernels.BinaryOp, shape []int, dst, a, b backend.Strided) error {
	if err := c.boolDst(op, dst, a); err != nil {
		return err
	}
	ops, err := c.stridedAll(op.String(), shape, dst, a, b)
	if err != nil || numel(shape) == 0 {
		return err
	}
	c.binary(op, shape, ops[0], ops[1], &ops[2], 0, false)
	return nil
}

// BinaryScalar computes dst = op(a, scalar), or op(scalar, a).
func (c *Compute) BinaryScalar(_ alloc.Stream, op kernels.BinaryOp, shape []int, dst, a backend.Strided, scalar float64, scalarFirst bool) error {
	if err := c.boolDst(op, dst, a); err != nil {
		return err
	}
	ops, err := c.stridedAll(op.String(), shape, dst, a)
	if err != nil || numel(shape) == 0 {
		return err
	}
	if isComparison(op) {
		scalar = backend.CompareScalar(a.Dtype, scalar)
	}
	c.binary(op, shape, ops[0], ops[1], nil, scalar, scalarFirst)
	return nil
}

// isComparison reports whether op is one of the comparisons, which may
// write a Bool dst from operands of another dtype.
func isComparison(op kernels.BinaryOp) bool {
	switch op {
	case kernels.Greater, kernels.Less, kernels.Equal, kernels.GreaterEqual, kernels.LessEqual:
		return true
	}
	return false
}

// boolDst refuses a Bool dst of an op other than a comparison over
// operands that are not Bool themselves.
func (c *Compute) boolDst(op kernels.BinaryOp, dst, a backend.Strided) error {
	if dst.Dtype == backend.Bool && a.Dtype != backend.Bool && !isComparison(op) {
		return fmt.Errorf("cpucompute: %v on %s: a bool dst from %s operands (only the comparisons write one)", op, c.name, a.Dtype)
	}
	return nil
}

// compareBool is the comparison d = op(a, b) (b == nil: the scalar s)
// into a Bool d for contiguous float32 or float64 operands of one dtype;
// it reports false for the other cases, which the generic loop compares
// in float64 (exact for every dtype's values up to 2⁵³).
func compareBool(op kernels.BinaryOp, shape []int, d, a operand, b *operand, s float64, scalarFirst bool) bool {
	if d.dt != backend.Bool || !isComparison(op) || (a.dt != f32t && a.dt != f64t) ||
		!kernels.IsContiguous(shape, d.strides) || !kernels.IsContiguous(shape, a.strides) || (b != nil && (b.dt != a.dt || !kernels.IsContiguous(shape, b.strides))) {
		return false
	}
	n := numel(shape)
	switch {
	case a.dt == f32t && b != nil:
		compareLoop(op, d.data[:n], kernels.Float32s(a.data)[:n], kernels.Float32s(b.data)[:n])
	case a.dt == f64t && b != nil:
		compareLoop(op, d.data[:n], kernels.Float64s(a.data)[:n], kernels.Float64s(b.data)[:n])
	case a.dt == f32t:
		compareScalarLoop(op, d.data[:n], kernels.Float32s(a.data)[:n], s, scalarFirst)
	default:
		compareScalarLoop(op, d.data[:n], kernels.Float64s(a.data)[:n], s, scalarFirst)
	}
	return true
}

// compareLoop dispatches once per call, not per element.
func compareLoop[T float32 | float64](op kernels.BinaryOp, d []byte, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	switch op {
	case kernels.Greater:
		for i := range d {
			d[i] = b2u(a[i] > b[i])
		}
	case kernels.Less:
		for i := range d {
			d[i] = b2u(a[i] < b[i])
		}
	case kernels.Equal:
		for i := range d {
			d[i] = b2u(a[i] == b[i])
		}
	case kernels.GreaterEqual:
		for i := range d {
			d[i] = b2u(a[i] >= b[i])
		}
	case kernels.LessEqual:
		for i := range d {
			d[i] = b2u(a[i] <= b[i])
		}
	}
}

// compareScalarLoop compares in float64 against s, which BinaryScalar has
// rounded to a's dtype (backend.CompareScalar); s op x is x op' s with
// the comparison mirrored.
func compareScalarLoop[T float32 | float64](op kernels.BinaryOp, d []byte, a []T, s float64, scalarFirst bool) {
	a = a[:len(d)]
	if scalarFirst {
		switch op {
		case kernels.Greater:
			op = kernels.Less
		case kernels.Less:
			op = kernels.Greater
		case kernels.GreaterEqual:
			op = kernels.LessEqual
		case kernels.LessEqual:
			op = kernels.GreaterEqual
		}
	}
	switch op {
	case kernels.Greater:
		for i := range d {
			d[i] = b2u(float64(a[i]) > s)
		}
	case kernels.Less:
		for i := range d {
			d[i] = b2u(float64(a[i]) < s)
		}
	case kernels.Equal:
		for i := range d {
			d[i] = b2u(float64(a[i]) == s)
		}
	case kernels.GreaterEqual:
		for i := range d {
			d[i] = b2u(float64(a[i]) >= s)
		}
	case kernels.LessEqual:
		for i := range d {
			d[i] = b2u(float64(a[i]) <= s)
		}
	}
}

// binary is Binary (b != nil) and BinaryScalar (b == nil: the scalar s).
func (c *Compute) binary(op kernels.BinaryOp, shape []int, d, a operand, b *operand, s float64, scalarFirst bool) {
	var zeros []int // the scalar's strides
	if b == nil {
		zeros = make([]int, len(shape))
	}
	switch {
	case b != nil && d.dt == f32t && a.dt == f32t && b.dt == f32t:
		kernels.BinaryStrided(op, shape, d.s32(), a.s32(), b.s32())
	case b != nil && d.dt == f64t && a.dt == f64t && b.dt == f64t:
		kernels.BinaryStrided(op, shape, d.s64(), a.s64(), b.s64())
	case b == nil && d.dt == f32t && a.dt == f32t:
		sc := kernels.Strided[float32]{Data: []float32{float32(s)}, Strides: zeros}
		if scalarFirst {
			kernels.BinaryStrided(op, shape, d.s32(), sc, a.s32())
		} else {
			kernels.BinaryStrided(op, shape, d.s32(), a.s32(), sc)
		}
	case b == nil && d.dt == f64t && a.dt == f64t:
		sc := kernels.Strided[float64]{Data: []float64{s}, Strides: zeros}
		if scalarFirst {
			kernels.BinaryStrided(op, shape, d.s64(), sc, a.s64())
		} else {
			kernels.BinaryStrided(op, shape, d.s64(), a.s64(), sc)
		}
	case halfBinary(op, shape, d, a, b):
	case compareBool(op, shape, d, a, b, s, scalarFirst):
	default:
		f32 := computeIn32(d.dt)
		bData, bDt, bStr := []byte(nil), d.dt, zeros
		if b != nil {
			bData, bDt, bStr = b.data, b.dt, b.strides
		}
		kernels.ForEachOffset(shape, []int{0, 0, 0}, [][]int{d.strides, a.strides, bStr}, func(_ int, o []int) {
			x := Load(a.dt, a.data, o[1])
			y := s
			if b != nil {
				y = Load(bDt, bData, o[2])
			}
			if scalarFirst {
				x, y = y, x
			}
			var r float64
			if f32 {
				r = float64(kernels.Apply(op, float32(x), float32(y)))
			} else {
				r = kernels.Apply(op, x, y)
			}
			Store(d.dt, d.data, o[0], r)
		})
	}
}

// halfStripe is how many half-precision elements are widened to float32
// at a time by the half fast paths.
const halfStripe = 1024

// decodeHalf widens len(dst) elements of src (dt, little-endian) to float32.
func decodeHalf(dt backend.Dtype, dst []float32, src []byte) {
	src = src[:2*len(dst)]
	if dt == backend.Float16 {
		for i := range dst {
			dst[i] = kernels.Float16ToFloat32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
		}
		return
	}
	for i := range dst {
		dst[i] = kernels.BFloat16ToFloat32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
	}
}

// encodeHalf rounds src to dt (to nearest even) into dst.
func encodeHalf(dt backend.Dtype, dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	for i, v := range src {
		var h uint16
		if dt == backend.Float16 {
			h = kernels.Float32ToFloat16(v)
		} else {
			h = kernels.Float32ToBFloat16(v)
		}
		dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
	}
}

// halfUnary computes d = op(a) for contiguous float16 or bfloat16 operands
// of one dtype through the float32 kernel, a stripe at a time: the values
// the per-element loop gives (each is rounded from the float32 result),
// with one kernel call per stripe instead of a dispatch per element.
func halfUnary(op kernels.UnaryOp, shape []int, d, a operand) bool {
	if !isHalf(d.dt) || a.dt != d.dt || !kernels.IsContiguous(shape, d.strides) || !kernels.IsContiguous(shape, a.strides) {
		return false
	}
	n := numel(shape)
	var buf [halfStripe]float32
	for p := 0; p < n; p += halfStripe {
		b := buf[:min(halfStripe, n-p)]
		decodeHalf(a.dt, b, a.data[2*p:])
		kernels.Unary(op, b, b)
		encodeHalf(d.dt, d.data[2*p:], b)
	}
	return true
}

// halfBinary is halfUnary for d = op(a, b) with a and b contiguous
// operands of d's dtype.
func halfBinary(op kernels.BinaryOp, shape []int, d, a operand, b *operand) bool {
	if !isHalf(d.dt) || b == nil || a.dt != d.dt || b.dt != d.dt || !kernels.IsContiguous(shape, d.strides) || !kernels.IsContiguous(shape, a.strides) || !kernels.IsContiguous(shape, b.strides) {
		return false
	}
	n := numel(shape)
	var ba, bb [halfStripe]float32
	for p := 0; p < n; p += halfStripe {
		m := min(halfStripe, n-p)
		x, y := ba[:m], bb[:m]
		decodeHalf(a.dt, x, a.data[2*p:])
		decodeHalf(b.dt, y, b.data[2*p:])
		kernels.Binary(op, x, x, y)
		encodeHalf(d.dt, d.data[2*p:], x)
	}
	return true
}

// Reduce reduces the middle dimension of src viewed as [outer, n, inner].
func (c *Compute) Reduce(_ alloc.Stream, op kernels.ReduceOp, dt backend.Dtype, dst, src uint64, outer, n, inner int) error {
	if op > kernels.ReduceMin {
		return fmt.Errorf("cpucompute: Reduce on %s: unknown %v", c.name, op)
	}
	d, err := c.bytes(op.String(), dst, dt, outer*inner)
	if err != nil || d == nil {
		return err
	}
	s, err := c.bytes(op.String(), src, dt, outer*n*inner)
	if err != nil {
		return err
	}
	switch dt {
	case f32t:
		kernels.Reduce(op, kernels.Float32s(d)[:outer*inner], kernels.Float32s(s)[:outer*n*inner], outer, n, inner)
		return nil
	case f64t:
		kernels.Reduce(op, kernels.Float64s(d)[:outer*inner], kernels.Float64s(s)[:outer*n*inner], outer, n, inner)
		return nil
	}
	// The other dtypes in float64, each result from its elements in order.
	acc := make([]float64, outer*inner)
	for i := range acc {
		switch op {
		case kernels.ReduceMax:
			acc[i] = math.Inf(-1)
		case kernels.ReduceMin:
			acc[i] = math.Inf(1)
		}
	}
	for o := range outer {
		for j := range n {
			for i := range inner {
				v, a := Load(dt, s, (o*n+j)*inner+i), &acc[o*inner+i]
				switch op {
				case kernels.ReduceSum, kernels.ReduceMean:
					*a += v
				case kernels.ReduceMax:
					if v > *a || v != v {
						*a = v
					}
				case kernels.ReduceMin:
					if v < *a || v != v {
						*a = v
					}
				}
				if (op == kernels.ReduceMax || op == kernels.ReduceMin) && *a != *a {
					*a = math.NaN()
				}
			}
		}
	}
	for i, v := range acc {
		if op == kernels.ReduceMean {
			v /= float64(n)
		}
		Store(dt, d, i, v)
	}
	return nil
}

// ReduceStrided sums (or averages) src over shape into dst; see
// backend.Compute.
func (c *Compute) ReduceStrided(_ alloc.Stream, op kernels.ReduceOp, shape []int, dst, src backend.Strided) error {
	if op != kernels.ReduceSum && op != kernels.ReduceMean {
		return &backend.UnsupportedError{Backend: c.name, Op: "ReduceStrided " + op.String(), Dtype: src.Dtype}
	}
	ops, err := c.stridedAll(op.String(), shape, dst, src)
	if err != nil || numel(shape) == 0 {
		return err
	}
	d, a := ops[0], ops[1]
	// The kept shape (reduced dimensions set to 1) and its dense
	// accumulator, read through strides that are 0 on the reduced
	// dimensions.
	kept := make([]int, len(shape))
	accStr := make([]int, len(shape))
	stride := 1
	for i := len(shape) - 1; i >= 0; i-- {
		kept[i] = shape[i]
		if shape[i] != 1 && d.strides[i] == 0 {
			kept[i] = 1
		}
		if kept[i] != 1 {
			accStr[i] = stride
		}
		stride *= kept[i]
	}
	acc := make([]float64, numel(kept))
	if a.dt == f32t {
		data := kernels.Float32s(a.data)
		kernels.ForEachOffset(shape, []int{0, 0}, [][]int{accStr, a.strides}, func(_ int, o []int) {
			acc[o[0]] += float64(data[o[1]])
		})
	} else {
		kernels.ForEachOffset(shape, []int{0, 0}, [][]int{accStr, a.strides}, func(_ int, o []int) {
			acc[o[0]] += Load(a.dt, a.data, o[1])
		})
	}
	div := 1.0
	if op == kernels.ReduceMean {
		div = float64(numel(shape)) / float64(max(len(acc), 1))
	}
	kernels.ForEachOffset(kept, []int{0, 0}, [][]int{kernels.ContiguousStrides(kept), d.strides}, func(_ int, o []int) {
		Store(d.dt, d.data, o[1], acc[o[0]]/div)
	})
	return nil
}

// ArgReduce writes the position and value of the largest (or smallest)
// element of each line of src.
func (c *Compute) ArgReduce(_ alloc.Stream, largest bool, dt backend.Dtype, index, value, src uint64, outer, n, inner int) error {
	const op = "ArgReduce"
	idx, err := c.bytes(op, index, backend.Int64, outer*inner)
	if err != nil || idx == nil {
		return err
	}
	val, err := c.bytes(op, value, dt, outer*inner)
	if err != nil {
		return err
	}
	s, err := c.bytes(op, src, dt, outer*n*inner)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("cpucompute: %s on %s: lines of no elements", op, c.name)
	}
	best := make([]int, outer*inner)
	switch dt {
	case f32t:
		if largest {
			kernels.ArgMax(best, kernels.Float32s(s)[:outer*n*inner], outer, n, inner)
		} else {
			kernels.ArgMin(best, kernels.Float32s(s)[:outer*n*inner], outer, n, inner)
		}
	case f64t:
		if largest {
			kernels.ArgMax(best, kernels.Float64s(s)[:outer*n*inner], outer, n, inner)
		} else {
			kernels.ArgMin(best, kernels.Float64s(s)[:outer*n*inner], outer, n, inner)
		}
	default:
		// Ties go to the lowest index and NaN wins, as in PyTorch.
		for o := range outer {
			for i := range inner {
				bv, bi := 0.0, -1
				for p := range n {
					v := Load(dt, s, (o*n+p)*inner+i)
					if bi < 0 || (v != v && bv == bv) || (largest && v > bv) || (!largest && v < bv) {
						bv, bi = v, p
					}
				}
				best[o*inner+i] = bi
			}
		}
	}
	for k, bi := range best {
		o, i := k/inner, k%inner
		Store(backend.Int64, idx, k, float64(bi))
		Store(dt, val, k, Load(dt, s, (o*n+bi)*inner+i))
	}
	return nil
}

// ArgReduceStrided is ArgReduce over the lines along dim of a strided src.
func (c *Compute) ArgReduceStrided(_ alloc.Stream, largest bool, shape []int, dim int, index, value, src backend.Strided) error {
	const op = "ArgReduceStrided"
	if dim < 0 || dim >= len(shape) || shape[dim] == 0 {
		return fmt.Errorf("cpucompute: %s on %s: dim %d of shape %v", op, c.name, dim, shape)
	}
	if index.Dtype != backend.Int64 || value.Dtype != src.Dtype {
		return fmt.Errorf("cpucompute: %s on %s: index of %s, value of %s for %s", op, c.name, index.Dtype, value.Dtype, src.Dtype)
	}
	ops, err := c.stridedAll(op, shape, index, value, src)
	if err != nil || numel(shape) == 0 {
		return err
	}
	ix, val, a := ops[0], ops[1], ops[2]
	n, step := shape[dim], a.strides[dim]
	lines := slices.Clone(shape)
	lines[dim] = 1
	// Ties go to the lowest index and NaN wins, as in PyTorch.
	kernels.ForEachOffset(lines, []int{0, 0, 0}, [][]int{a.strides, ix.strides, val.strides}, func(_ int, o []int) {
		bv, bi := 0.0, -1
		for p := range n {
			v := Load(a.dt, a.data, o[0]+p*step)
			if bi < 0 || (v != v && bv == bv) || (largest && v > bv) || (!largest && v < bv) {
				bv, bi = v, p
			}
		}
		Store(backend.Int64, ix.data, o[1], float64(bi))
		Store(val.dt, val.data, o[2], Load(a.dt, a.data, o[0]+bi*step))
	})
	return nil
}

// matrix resolves a rows×cols matrix stored with leading dimension ld.
func (c *Compute) matrix(addr uint64, dt backend.Dtype, trans bool, rows, cols, ld int) ([]byte, error) {
	if trans {
		rows, cols = cols, rows
	}
	if rows == 0 || cols == 0 {
		return nil, nil
	}
	if ld < cols {
		return nil, fmt.Errorf("cpucompute: Gemm on %s: leading dimension %d below %d", c.name, ld, cols)
	}
	return c.bytes("Gemm", addr, dt, (rows-1)*ld+cols)
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C.
func (c *Compute) Gemm(_ alloc.Stream, dt backend.Dtype, transA, transB bool, m, n, k int, alpha float64, a uint64, lda int, b uint64, ldb int, beta float64, cAddr uint64, ldc int) error {
	if m == 0 || n == 0 {
		return nil
	}
	cb, err := c.matrix(cAddr, dt, false, m, n, ldc)
	if err != nil {
		return err
	}
	ab, err := c.matrix(a, dt, transA, m, k, lda)
	if err != nil {
		return err
	}
	bb, err := c.matrix(b, dt, transB, k, n, ldb)
	if err != nil {
		return err
	}
	switch dt {
	case f32t:
		kernels.Sgemm(transA, transB, m, n, k, float32(alpha), kernels.Float32s(ab), lda, kernels.Float32s(bb), ldb, float32(beta), kernels.Float32s(cb), ldc)
		return nil
	case f64t:
		kernels.Dgemm(transA, transB, m, n, k, alpha, kernels.Float64s(ab), lda, kernels.Float64s(bb), ldb, beta, kernels.Float64s(cb), ldc)
		return nil
	}
	// The half types: float32 dot products (halfGemm); the integer ones
	// and bool: one float64 dot product per element.
	if computeIn32(dt) {
		halfGemm(dt, transA, transB, m, n, k, alpha, ab, lda, bb, ldb, beta, cb, ldc)
		return nil
	}
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				s += Load(dt, ab, opIndex(transA, lda, i, p)) * Load(dt, bb, opIndex(transB, ldb, p, j))
			}
			storeScaled(dt, cb, i*ldc+j, s, alpha, beta)
		}
	}
	return nil
}

// halfGemm is Gemm for float16 and bfloat16: each element one float32 dot
// product over k in order, s = s + x·y rounded to float32 at every step
// (the product of two half values is exact in float32, so a fused
// multiply-add rounds alike), then alpha, beta and the store as for the
// other dtypes. The operands are widened to float32 first, op(A) by rows
// and op(B) by columns, so each dot product reads two contiguous runs; four
// columns go at once, four independent chains instead of one add after
// another. The widened copies are the host's scratch, not device memory.
func halfGemm(dt backend.Dtype, transA, transB bool, m, n, k int, alpha float64, ab []byte, lda int, bb []byte, ldb int, beta float64, cb []byte, ldc int) {
	rows := make([]float32, m*k) // rows[i·k+p] = op(A)[i, p]
	for i := range m {
		for p := range k {
			rows[i*k+p] = float32(Load(dt, ab, opIndex(transA, lda, i, p)))
		}
	}
	cols := make([]float32, n*k) // cols[j·k+p] = op(B)[p, j]
	for j := range n {
		for p := range k {
			cols[j*k+p] = float32(Load(dt, bb, opIndex(transB, ldb, p, j)))
		}
	}
	store := func(i, j int, s float32) { storeScaled(dt, cb, i*ldc+j, float64(s), alpha, beta) }
	for i := range m {
		a := rows[i*k : i*k+k]
		j := 0
		for ; j+4 <= n; j += 4 {
			b0, b1, b2, b3 := cols[j*k:j*k+k], cols[(j+1)*k:(j+1)*k+k], cols[(j+2)*k:(j+2)*k+k], cols[(j+3)*k:(j+3)*k+k]
			var s0, s1, s2, s3 float32
			for p, x := range a {
				s0 += x * b0[p]
				s1 += x * b1[p]
				s2 += x * b2[p]
				s3 += x * b3[p]
			}
			store(i, j, s0)
			store(i, j+1, s1)
			store(i, j+2, s2)
			store(i, j+3, s3)
		}
		for ; j < n; j++ {
			b := cols[j*k : j*k+k]
			var s float32
			for p, x := range a {
				s += x * b[p]
			}
			store(i, j, s)
		}
	}
}

// opIndex is the index of op(X)[i, j] in X stored by rows with stride ld,
// op(X) = Xᵀ when trans.
func opIndex(trans bool, ld, i, j int) int {
	if trans {
		return j*ld + i
	}
	return i*ld + j
}

// storeScaled stores alpha·s + beta·C[idx] at C[idx] in dtype dt, reading C
// only when beta ≠ 0 (as BLAS does).
func storeScaled(dt backend.Dtype, c []byte, idx int, s, alpha, beta float64) {
	if alpha != 1 || beta != 0 {
		old := 0.0
		if beta != 0 {
			old = beta * Load(dt, c, idx)
		}
		s = alpha*s + old
	}
	Store(dt, c, idx, s)
}

// Adam applies one Adam step; float32 and float64 only.
func (c *Compute) Adam(_ alloc.Stream, dt backend.Dtype, p, g, m, v uint64, n int, sc kernels.AdamScalars) error {
	if dt != f32t && dt != f64t {
		return &backend.UnsupportedError{Backend: c.name, Op: "Adam", Dtype: dt}
	}
	var bs [4][]byte
	for i, addr := range []uint64{p, g, m, v} {
		b, err := c.bytes("Adam", addr, dt, n)
		if err != nil || b == nil {
			return err
		}
		bs[i] = b
	}
	if dt == f32t {
		f := func(b []byte) []float32 { return kernels.Float32s(b)[:n] }
		kernels.AdamUpdate(f(bs[0]), f(bs[1]), f(bs[2]), f(bs[3]), sc)
	} else {
		f := func(b []byte) []float64 { return kernels.Float64s(b)[:n] }
		kernels.AdamUpdate(f(bs[0]), f(bs[1]), f(bs[2]), f(bs[3]), sc)
	}
	return nil
}

// GemmBatched computes len(c) products as Gemm. float32 batches run in
// one kernels.SgemmOffsets call over the span of memory that each operand's
// matrices cover, which spreads the products over the cores; the other
// dtypes run one Gemm each.
func (c *Compute) GemmBatched(s alloc.Stream, dt backend.Dtype, transA, transB bool, m, n, k int, alpha float64, a []uint64, lda int, b []uint64, ldb int, beta float64, cs []uint64, ldc int) error {
	if len(a) != len(cs) || len(b) != len(cs) {
		return fmt.Errorf("cpucompute: GemmBatched on %s: %d, %d and %d matrices", c.name, len(a), len(b), len(cs))
	}
	if dt != f32t || len(cs) == 0 || m == 0 || n == 0 {
		for i := range cs {
			if err := c.Gemm(s, dt, transA, transB, m, n, k, alpha, a[i], lda, b[i], ldb, beta, cs[i], ldc); err != nil {
				return err
			}
		}
		return nil
	}
	ad, offA, err := c.batchSpan(a, transA, m, k, lda)
	if err != nil {
		return err
	}
	bd, offB, err := c.batchSpan(b, transB, k, n, ldb)
	if err != nil {
		return err
	}
	cd, offC, err := c.batchSpan(cs, false, m, n, ldc)
	if err != nil {
		return err
	}
	kernels.SgemmOffsets(transA, transB, m, n, k, float32(alpha), ad, lda, offA, bd, ldb, offB, float32(beta), cd, ldc, offC)
	return nil
}

// batchSpan resolves the float32 memory from the lowest to the end of the
// highest of the rows×cols matrices (leading dimension ld) at addrs, and
// each matrix's offset in it, in elements.
func (c *Compute) batchSpan(addrs []uint64, trans bool, rows, cols, ld int) ([]float32, []int, error) {
	if trans {
		rows, cols = cols, rows
	}
	lo, hi := addrs[0], addrs[0]
	for _, p := range addrs {
		lo, hi = min(lo, p), max(hi, p)
	}
	if (hi-lo)%4 != 0 {
		return nil, nil, fmt.Errorf("cpucompute: GemmBatched on %s: matrices not a whole number of elements apart", c.name)
	}
	ext := 0
	if rows > 0 && cols > 0 {
		if ld < cols {
			return nil, nil, fmt.Errorf("cpucompute: Gemm on %s: leading dimension %d below %d", c.name, ld, cols)
		}
		ext = (rows-1)*ld + cols
	}
	data, err := c.bytes("GemmBatched", lo, f32t, int(hi-lo)/4+ext)
	if err != nil {
		return nil, nil, err
	}
	offs := make([]int, len(addrs))
	for i, p := range addrs {
		offs[i] = int(p-lo) / 4
	}
	return kernels.Float32s(data), offs, nil
}

// Where writes dst = a where cond else b; a, b and dst have one dtype,
// whose elements are copied bit for bit.
func (c *Compute) Where(_ alloc.Stream, shape []int, dst, cond, a, b backend.Strided) error {
	if cond.Dtype != backend.Bool || a.Dtype != dst.Dtype || b.Dtype != dst.Dtype {
		return fmt.Errorf("cpucompute: Where on %s: cond of %s, values of %s and %s into %s (want bool and one dtype)", c.name, cond.Dtype, a.Dtype, b.Dtype, dst.Dtype)
	}
	ops, err := c.stridedAll("Where", shape, dst, cond, a, b)
	if err != nil || numel(shape) == 0 {
		return err
	}
	d, m, x, y := ops[0], ops[1], ops[2], ops[3]
	if hasBroadcast(shape, d.strides) {
		return fmt.Errorf("cpucompute: Where on %s: dst broadcasts (strides %v)", c.name, d.strides)
	}
	sz := d.dt.Size()
	if kernels.IsContiguous(shape, d.strides) && kernels.IsContiguous(shape, m.strides) && kernels.IsContiguous(shape, x.strides) && kernels.IsContiguous(shape, y.strides) {
		n := numel(shape)
		switch sz {
		case 4:
			whereLoop(kernels.Float32s(d.data)[:n], m.data[:n], kernels.Float32s(x.data)[:n], kernels.Float32s(y.data)[:n])
			return nil
		case 8:
			whereLoop(kernels.Float64s(d.data)[:n], m.data[:n], kernels.Float64s(x.data)[:n], kernels.Float64s(y.data)[:n])
			return nil
		}
	}
	kernels.ForEachOffset(shape, []int{0, 0, 0, 0}, [][]int{d.strides, m.strides, x.strides, y.strides}, func(_ int, o []int) {
		src, i := y.data, o[3]
		if m.data[o[1]] != 0 {
			src, i = x.data, o[2]
		}
		copy(d.data[o[0]*sz:o[0]*sz+sz], src[i*sz:i*sz+sz])
	})
	return nil
}

// whereLoop is Where over contiguous slices; assigning a float moves its
// bits unchanged (NaN payloads included).
func whereLoop[T float32 | float64](d []T, m []byte, a, b []T) {
	for i := range d {
		v := b[i]
		if m[i] != 0 {
			v = a[i]
		}
		d[i] = v
	}
}

// InRange writes the Bool dst = lo ≤ src ≤ hi, comparing in float64 (a
// NaN gives false).
func (c *Compute) InRange(_ alloc.Stream, shape []int, dst, src backend.Strided, lo, hi float64) error {
	if dst.Dtype != backend.Bool {
		return fmt.Errorf("cpucompute: InRange on %s: dst of %s, want bool", c.name, dst.Dtype)
	}
	ops, err := c.stridedAll("InRange", shape, dst, src)
	if err != nil || numel(shape) == 0 {
		return err
	}
	d, a := ops[0], ops[1]
	lo, hi = backend.CompareScalar(a.dt, lo), backend.CompareScalar(a.dt, hi)
	if kernels.IsContiguous(shape, d.strides) && kernels.IsContiguous(shape, a.strides) {
		n := numel(shape)
		switch a.dt {
		case f32t:
			inRangeLoop(d.data[:n], kernels.Float32s(a.data)[:n], lo, hi)
			return nil
		case f64t:
			inRangeLoop(d.data[:n], kernels.Float64s(a.data)[:n], lo, hi)
			return nil
		}
	}
	kernels.ForEachOffset(shape, []int{0, 0}, [][]int{d.strides, a.strides}, func(_ int, o []int) {
		x := Load(a.dt, a.data, o[1])
		d.data[o[0]] = b2u(x >= lo && x <= hi)
	})
	return nil
}

func inRangeLoop[T float32 | float64](d []byte, x []T, lo, hi float64) {
	for i, v := range x {
		d[i] = b2u(float64(v) >= lo && float64(v) <= hi)
	}
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}
