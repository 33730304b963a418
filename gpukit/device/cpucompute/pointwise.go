package cpucompute

import (
	"fmt"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/kernels"
	"github.com/gpumem/course/gpukit/layout"
	"github.com/gpumem/course/gpukit/ops"
)

// The elementwise ops: Unary, Binary and BinaryScalar, their comparisons
// into a bool dst, Where and InRange.

// Unary computes dst = op(src).
func (c *Compute) Unary(_ alloc.Stream, op ops.Unary, shape []int, dst, src backend.Strided) error {
	opnd, err := c.stridedAll(op.String(), shape, dst, src)
	if err != nil || numel(shape) == 0 {
		return err
	}
	d, a := opnd[0], opnd[1]
	switch {
	case d.dt == f32t && a.dt == f32t:
		kernels.UnaryStrided(op, shape, d.s32(), a.s32())
	case d.dt == f64t && a.dt == f64t:
		kernels.UnaryStrided(op, shape, d.s64(), a.s64())
	case halfUnary(op, shape, d, a):
	default:
		f32 := computeIn32(d.dt)
		layout.ForEachOffset(shape, []int{0, 0}, [][]int{d.strides, a.strides}, func(_ int, o []int) {
			x := dtypes.Load(a.dt, a.data, o[1])
			var r float64
			if f32 {
				r = float64(kernels.ApplyUnary(op, float32(x)))
			} else {
				r = kernels.ApplyUnary(op, x)
			}
			dtypes.Store(d.dt, d.data, o[0], r)
		})
	}
	return nil
}

// Binary computes dst = op(a, b).
func (c *Compute) Binary(_ alloc.Stream, op ops.Binary, shape []int, dst, a, b backend.Strided) error {
	if err := c.boolDst(op, dst, a); err != nil {
		return err
	}
	opnd, err := c.stridedAll(op.String(), shape, dst, a, b)
	if err != nil || numel(shape) == 0 {
		return err
	}
	c.binary(op, shape, opnd[0], opnd[1], &opnd[2], 0, false)
	return nil
}

// BinaryScalar computes dst = op(a, scalar), or op(scalar, a).
func (c *Compute) BinaryScalar(_ alloc.Stream, op ops.Binary, shape []int, dst, a backend.Strided, scalar float64, scalarFirst bool) error {
	if err := c.boolDst(op, dst, a); err != nil {
		return err
	}
	opnd, err := c.stridedAll(op.String(), shape, dst, a)
	if err != nil || numel(shape) == 0 {
		return err
	}
	if op.Comparison() {
		scalar = dtypes.Round(a.Dtype, scalar)
	}
	c.binary(op, shape, opnd[0], opnd[1], nil, scalar, scalarFirst)
	return nil
}

// boolDst refuses a Bool dst of an op other than a comparison over
// operands that are not Bool themselves.
func (c *Compute) boolDst(op ops.Binary, dst, a backend.Strided) error {
	if dst.Dtype == dtypes.Bool && a.Dtype != dtypes.Bool && !op.Comparison() {
		return fmt.Errorf("cpucompute: %v on %s: a bool dst from %s operands (only the comparisons write one)", op, c.name, a.Dtype)
	}
	return nil
}

// compareBool is the comparison d = op(a, b) (b == nil: the scalar s)
// into a Bool d for contiguous float32 or float64 operands of one dtype;
// it reports false for the other cases, which the generic loop compares
// in float64 (exact for every dtype's values up to 2⁵³).
func compareBool(op ops.Binary, shape []int, d, a operand, b *operand, s float64, scalarFirst bool) bool {
	if d.dt != dtypes.Bool || !op.Comparison() || (a.dt != f32t && a.dt != f64t) ||
		!layout.IsContiguous(shape, d.strides) || !layout.IsContiguous(shape, a.strides) || (b != nil && (b.dt != a.dt || !layout.IsContiguous(shape, b.strides))) {
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
func compareLoop[T float32 | float64](op ops.Binary, d []byte, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	switch op {
	case ops.Greater:
		for i := range d {
			d[i] = b2u(a[i] > b[i])
		}
	case ops.Less:
		for i := range d {
			d[i] = b2u(a[i] < b[i])
		}
	case ops.Equal:
		for i := range d {
			d[i] = b2u(a[i] == b[i])
		}
	case ops.GreaterEqual:
		for i := range d {
			d[i] = b2u(a[i] >= b[i])
		}
	case ops.LessEqual:
		for i := range d {
			d[i] = b2u(a[i] <= b[i])
		}
	}
}

// compareScalarLoop compares in float64 against s, which BinaryScalar has
// rounded to a's dtype (dtypes.Round); s op x is x op' s with
// the comparison mirrored.
func compareScalarLoop[T float32 | float64](op ops.Binary, d []byte, a []T, s float64, scalarFirst bool) {
	a = a[:len(d)]
	if scalarFirst {
		switch op {
		case ops.Greater:
			op = ops.Less
		case ops.Less:
			op = ops.Greater
		case ops.GreaterEqual:
			op = ops.LessEqual
		case ops.LessEqual:
			op = ops.GreaterEqual
		}
	}
	switch op {
	case ops.Greater:
		for i := range d {
			d[i] = b2u(float64(a[i]) > s)
		}
	case ops.Less:
		for i := range d {
			d[i] = b2u(float64(a[i]) < s)
		}
	case ops.Equal:
		for i := range d {
			d[i] = b2u(float64(a[i]) == s)
		}
	case ops.GreaterEqual:
		for i := range d {
			d[i] = b2u(float64(a[i]) >= s)
		}
	case ops.LessEqual:
		for i := range d {
			d[i] = b2u(float64(a[i]) <= s)
		}
	}
}

// binary is Binary (b != nil) and BinaryScalar (b == nil: the scalar s).
func (c *Compute) binary(op ops.Binary, shape []int, d, a operand, b *operand, s float64, scalarFirst bool) {
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
		layout.ForEachOffset(shape, []int{0, 0, 0}, [][]int{d.strides, a.strides, bStr}, func(_ int, o []int) {
			x := dtypes.Load(a.dt, a.data, o[1])
			y := s
			if b != nil {
				y = dtypes.Load(bDt, bData, o[2])
			}
			if scalarFirst {
				x, y = y, x
			}
			var r float64
			if f32 {
				r = float64(kernels.ApplyBinary(op, float32(x), float32(y)))
			} else {
				r = kernels.ApplyBinary(op, x, y)
			}
			dtypes.Store(d.dt, d.data, o[0], r)
		})
	}
}

// halfStripe is how many half-precision elements are widened to float32
// at a time by the half fast paths.
const halfStripe = 1024

// decodeHalf widens len(dst) elements of src (dt, little-endian) to float32.
func decodeHalf(dt dtypes.Dtype, dst []float32, src []byte) {
	src = src[:2*len(dst)]
	if dt == dtypes.Float16 {
		for i := range dst {
			dst[i] = dtypes.Float16ToFloat32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
		}
		return
	}
	for i := range dst {
		dst[i] = dtypes.BFloat16ToFloat32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
	}
}

// encodeHalf rounds src to dt (to nearest even) into dst.
func encodeHalf(dt dtypes.Dtype, dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	for i, v := range src {
		var h uint16
		if dt == dtypes.Float16 {
			h = dtypes.Float32ToFloat16(v)
		} else {
			h = dtypes.Float32ToBFloat16(v)
		}
		dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
	}
}

// halfUnary computes d = op(a) for contiguous float16 or bfloat16 operands
// of one dtype through the float32 kernel, a stripe at a time: the values
// the per-element loop gives (each is rounded from the float32 result),
// with one kernel call per stripe instead of a dispatch per element.
func halfUnary(op ops.Unary, shape []int, d, a operand) bool {
	if !isHalf(d.dt) || a.dt != d.dt || !layout.IsContiguous(shape, d.strides) || !layout.IsContiguous(shape, a.strides) {
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
func halfBinary(op ops.Binary, shape []int, d, a operand, b *operand) bool {
	if !isHalf(d.dt) || b == nil || a.dt != d.dt || b.dt != d.dt || !layout.IsContiguous(shape, d.strides) || !layout.IsContiguous(shape, a.strides) || !layout.IsContiguous(shape, b.strides) {
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

// Where writes dst = a where cond else b; a, b and dst have one dtype,
// whose elements are copied bit for bit.
func (c *Compute) Where(_ alloc.Stream, shape []int, dst, cond, a, b backend.Strided) error {
	if cond.Dtype != dtypes.Bool || a.Dtype != dst.Dtype || b.Dtype != dst.Dtype {
		return fmt.Errorf("cpucompute: Where on %s: cond of %s, values of %s and %s into %s (want bool and one dtype)", c.name, cond.Dtype, a.Dtype, b.Dtype, dst.Dtype)
	}
	opnd, err := c.stridedAll("Where", shape, dst, cond, a, b)
	if err != nil || numel(shape) == 0 {
		return err
	}
	d, m, x, y := opnd[0], opnd[1], opnd[2], opnd[3]
	if hasBroadcast(shape, d.strides) {
		return fmt.Errorf("cpucompute: Where on %s: dst broadcasts (strides %v)", c.name, d.strides)
	}
	sz := d.dt.Size()
	if layout.IsContiguous(shape, d.strides) && layout.IsContiguous(shape, m.strides) && layout.IsContiguous(shape, x.strides) && layout.IsContiguous(shape, y.strides) {
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
	layout.ForEachOffset(shape, []int{0, 0, 0, 0}, [][]int{d.strides, m.strides, x.strides, y.strides}, func(_ int, o []int) {
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
	if dst.Dtype != dtypes.Bool {
		return fmt.Errorf("cpucompute: InRange on %s: dst of %s, want bool", c.name, dst.Dtype)
	}
	opnd, err := c.stridedAll("InRange", shape, dst, src)
	if err != nil || numel(shape) == 0 {
		return err
	}
	d, a := opnd[0], opnd[1]
	lo, hi = dtypes.Round(a.dt, lo), dtypes.Round(a.dt, hi)
	if layout.IsContiguous(shape, d.strides) && layout.IsContiguous(shape, a.strides) {
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
	layout.ForEachOffset(shape, []int{0, 0}, [][]int{d.strides, a.strides}, func(_ int, o []int) {
		x := dtypes.Load(a.dt, a.data, o[1])
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
