//go:build cuda || nvrtc

package cuda

// The plans of the elementwise Compute calls (elementwise.cu): each checks
// the call's dtypes and operands and says which entry point to launch over
// which spans. Like the row plans (rows.go) they touch no driver, so
// elementwise_test.go tests them and the emulation runs them without a GPU.

import (
	"fmt"
	"slices"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

// knownDtype checks that d is one of backend's dtypes.
func knownDtype(dev, op string, ds ...dtypes.Dtype) error {
	for _, d := range ds {
		if !slices.Contains(allDtypes, d) {
			return argError(dev, op, "unknown %v", d)
		}
	}
	return nil
}

// planElementwise packs the operands (out first) over shape into a plan
// of entry of program p: one thread per element of shape, each operand's
// span checked by run.
func planElementwise(dev, op string, p program, entry string, shape []int, ops ...backend.Strided) (plan[elementwiseArgs], error) {
	args, err := newElementwiseArgs(shape, ops...)
	if err != nil {
		return plan[elementwiseArgs]{}, fmt.Errorf("cuda: %s: %s: %w", dev, op, err)
	}
	pl := plan[elementwiseArgs]{prog: p, args: args}
	if args.n == 0 {
		return pl, nil
	}
	for i, o := range ops {
		pl.spans = append(pl.spans, stridedSpan(fmt.Sprintf("operand %d", i), o, shape))
	}
	pl.steps = []step{{entry, gridFor(args.n)}}
	return pl, nil
}

// planFill sets every element of dst to v, converted as cpucompute's
// Store converts (a 16-bit float through float32, an integer truncated,
// a bool 1 unless v is 0).
func planFill(dev string, shape []int, dst backend.Strided, v float64) (plan[elementwiseArgs], error) {
	if err := knownDtype(dev, "Fill", dst.Dtype); err != nil {
		return plan[elementwiseArgs]{}, err
	}
	pl, err := planElementwise(dev, "Fill", program{fam: famConvert, out: dst.Dtype, in: dst.Dtype}, "fill", shape, dst)
	pl.args.scalar = v
	return pl, err
}

// planCopy copies src into dst, converting between any two dtypes as
// cpucompute's Copy (the same dtype: the bits).
func planCopy(dev string, shape []int, dst, src backend.Strided) (plan[elementwiseArgs], error) {
	if err := knownDtype(dev, "Copy", dst.Dtype, src.Dtype); err != nil {
		return plan[elementwiseArgs]{}, err
	}
	return planElementwise(dev, "Copy", program{fam: famConvert, out: dst.Dtype, in: dst.Dtype}, copyEntry(src.Dtype), shape, dst, src)
}

// planUnary computes dst = op(src) for one dtype that is not Bool.
func planUnary(dev string, op ops.Unary, shape []int, dst, src backend.Strided) (plan[elementwiseArgs], error) {
	var none plan[elementwiseArgs]
	if _, ok := unaryExpr[op]; !ok {
		return none, argError(dev, "Unary", "unknown %v", op)
	}
	if err := knownDtype(dev, op.String(), dst.Dtype, src.Dtype); err != nil {
		return none, err
	}
	if dst.Dtype != src.Dtype {
		return none, argError(dev, op.String(), "dtypes differ (%v from %v); use Copy to convert", dst.Dtype, src.Dtype)
	}
	if !arithmetic(src.Dtype) {
		return none, &backend.UnsupportedError{Backend: dev, Op: op.String(), Dtype: src.Dtype}
	}
	return planElementwise(dev, op.String(), program{fam: famUnary, out: dst.Dtype, in: src.Dtype}, unaryEntry(op), shape, dst, src)
}

// planBinary computes dst = op(a, b) (b != nil) or op(a, scalar), or
// op(scalar, a) when scalarFirst. a and b have one dtype, not Bool; dst
// has theirs, or Bool for a comparison.
func planBinary(dev string, op ops.Binary, shape []int, dst, a backend.Strided, b *backend.Strided, scalar float64, scalarFirst bool) (plan[elementwiseArgs], error) {
	var none plan[elementwiseArgs]
	if _, ok := binaryExpr[op]; !ok {
		return none, argError(dev, "Binary", "unknown %v", op)
	}
	ops := []backend.Strided{dst, a}
	if b != nil {
		ops = append(ops, *b)
	}
	for _, o := range ops {
		if err := knownDtype(dev, op.String(), o.Dtype); err != nil {
			return none, err
		}
	}
	if b != nil && b.Dtype != a.Dtype {
		return none, argError(dev, op.String(), "dtypes differ (%v op %v)", a.Dtype, b.Dtype)
	}
	if dst.Dtype != a.Dtype && !(dst.Dtype == dtypes.Bool && op.Comparison()) {
		return none, argError(dev, op.String(), "dst is %v for %v operands (only a comparison may write bool)", dst.Dtype, a.Dtype)
	}
	if !arithmetic(a.Dtype) {
		return none, &backend.UnsupportedError{Backend: dev, Op: op.String(), Dtype: a.Dtype}
	}
	pl, err := planElementwise(dev, op.String(), program{fam: famBinary, out: dst.Dtype, in: a.Dtype}, binaryEntry(op), shape, ops...)
	if op.Comparison() {
		scalar = dtypes.Round(a.Dtype, scalar)
	}
	pl.args.scalar = scalar
	switch {
	case b != nil:
		pl.args.scalarMode = 0
	case scalarFirst:
		pl.args.scalarMode = 2
	default:
		pl.args.scalarMode = 1
	}
	return pl, err
}

// planWhere writes dst = a where cond else b: cond Bool, the others one
// dtype (any).
func planWhere(dev string, shape []int, dst, cond, a, b backend.Strided) (plan[elementwiseArgs], error) {
	var none plan[elementwiseArgs]
	if err := knownDtype(dev, "Where", dst.Dtype, cond.Dtype, a.Dtype, b.Dtype); err != nil {
		return none, err
	}
	if cond.Dtype != dtypes.Bool {
		return none, argError(dev, "Where", "cond is %v, not bool", cond.Dtype)
	}
	if a.Dtype != dst.Dtype || b.Dtype != dst.Dtype {
		return none, argError(dev, "Where", "dtypes differ (%v = cond ? %v : %v)", dst.Dtype, a.Dtype, b.Dtype)
	}
	return planElementwise(dev, "Where", program{fam: famWhere, out: dst.Dtype, in: dst.Dtype}, "where", shape, dst, cond, a, b)
}

// planInRange writes the Bool dst = lo ≤ src ≤ hi, compared in float64.
func planInRange(dev string, shape []int, dst, src backend.Strided, lo, hi float64) (plan[elementwiseArgs], error) {
	var none plan[elementwiseArgs]
	if err := knownDtype(dev, "InRange", dst.Dtype, src.Dtype); err != nil {
		return none, err
	}
	if dst.Dtype != dtypes.Bool {
		return none, argError(dev, "InRange", "dst is %v, not bool", dst.Dtype)
	}
	pl, err := planElementwise(dev, "InRange", program{fam: famInRange, out: dtypes.Bool, in: src.Dtype}, "in_range", shape, dst, src)
	pl.args.scalar, pl.args.scalar2 = dtypes.Round(src.Dtype, lo), dtypes.Round(src.Dtype, hi)
	return pl, err
}
