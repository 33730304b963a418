//go:build cuda || nvrtc

package cuda

// The Go side of the row kernels (rows.cu) and of gather and scatter-add
// (index.cu): their argument structs, laid out like the C ones, and the
// plans that check a call's arguments and say what to launch. Planning
// touches no driver, so it builds with the nvrtc tag too and rows_test.go
// tests it without a GPU; compute.go runs a plan (run) after checking its
// spans against the live allocations.

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

// colsPerBlock is how many columns one block of layer_norm_backward_cols
// sums (COLS in rows.cu); blockSize/colsPerBlock warps split the rows.
const colsPerBlock = 32

// softmaxArgs is struct Args of rows.cu (KERNEL_SOFTMAX, KERNEL_LOG_SOFTMAX).
type softmaxArgs struct {
	dst, src uint64
	rows, n  int64
}

// layerNormArgs is struct Args of rows.cu (KERNEL_LAYER_NORM).
type layerNormArgs struct {
	y, mean, rstd, x, w, b uint64
	rows, n                int64
	eps                    float64
}

// layerNormBackwardArgs is struct Args of rows.cu
// (KERNEL_LAYER_NORM_BACKWARD).
type layerNormBackwardArgs struct {
	dx, dw, db, g, x, mean, rstd, w uint64
	rows, n                         int64
}

// vecArg is struct Vec of rows.cu: a per-channel vector of BatchNorm.
type vecArg struct {
	addr     uint64
	stride   int64
	isDouble int64
}

// batchNormArgs is struct Args of rows.cu (KERNEL_BATCH_NORM).
type batchNormArgs struct {
	y, x                                  uint64
	batch, channels, length               int64
	weight, bias, runningMean, runningVar vecArg
	saveMean, saveInvstd                  uint64
	statDouble, training                  int64
	momentum, eps                         float64
}

// batchNormBackwardArgs is struct Args of rows.cu
// (KERNEL_BATCH_NORM_BACKWARD).
type batchNormBackwardArgs struct {
	grad, x, gradX                             uint64
	batch, channels, length                    int64
	gradWeight, gradBias, weight, stat1, stat2 vecArg
	training                                   int64
	eps                                        float64
}

// nllArgs is struct Args of rows.cu (KERNEL_NLL_LOSS).
type nllArgs struct {
	out, logProbs, targets uint64
	rows, n                int64
}

// adamArgs is struct Args of rows.cu (KERNEL_ADAM).
type adamArgs struct {
	p, g, m, v                                                      uint64
	n                                                               int64
	decay, beta1, oneMinusBeta1, beta2, oneMinusBeta2, bc2Sqrt, eps float64
	stepSize, weightDecay                                           float64
	adamW, l2                                                       int64
}

// indexArgs is struct Args of index.cu.
type indexArgs struct {
	dst, src, index             uint64
	n, lineLen                  int64
	dstStep, srcStep, indexStep int64
	l                           layoutArg
}

// csrArgs is struct Args of rows.cu (KERNEL_CSR): x and y are the dense
// operands (CSRMatmul's b; CSRMatmulT's g; CSRSampledDot's g and b).
type csrArgs struct {
	out, vals, cols, offs, x, y uint64
	rows, k, nnz, n             int64
}

// kernelArgs are the argument structs a kernel takes by value: structs of
// 8-byte fields without Go pointers, each the twin of a C struct whose
// size the kernel source checks with a static_assert.
type kernelArgs interface {
	elementwiseArgs | reduceArgs | softmaxArgs | layerNormArgs | layerNormBackwardArgs |
		batchNormArgs | batchNormBackwardArgs | nllArgs | adamArgs | indexArgs | csrArgs
}

// span is a device range that a plan's launches read or write; it must lie
// inside one live allocation.
type span struct {
	what  string
	addr  uint64
	bytes int64
}

// step is one launch of a plan: an entry point of the program and its
// number of blocks (of blockSize threads).
type step struct {
	entry string
	grid  int
}

// plan is what a Compute call queues: program prog's entry points, in
// order, each with the argument args, once every span is checked. A plan
// without steps has nothing to do (an empty input).
type plan[A kernelArgs] struct {
	prog  program
	steps []step
	spans []span
	args  A
}

// argError is the error of a call with bad arguments.
func argError(dev, op, format string, a ...any) error {
	return fmt.Errorf("cuda: %s: %s: %s", dev, op, fmt.Sprintf(format, a...))
}

// floatKernel reports whether the row kernels, ScatterAdd and the sparse
// products take dt: float32 and float64.
func floatKernel(dt dtypes.Dtype) bool {
	return dt == dtypes.Float32 || dt == dtypes.Float64
}

// floatDtype returns an UnsupportedError unless dt is float32 or float64.
func floatDtype(dev, op string, dt dtypes.Dtype) error {
	if !floatKernel(dt) {
		return &backend.UnsupportedError{Backend: dev, Op: op, Dtype: dt}
	}
	return nil
}

// indexDtype checks that dt is an index dtype (Int64 or Int32).
func indexDtype(dev, op, what string, dt dtypes.Dtype) error {
	if dt != dtypes.Int64 && dt != dtypes.Int32 {
		return argError(dev, op, "%s must be int64 or int32, not %v", what, dt)
	}
	return nil
}

// maxElems bounds element counts so that a count in bytes fits an int64.
const maxElems = math.MaxInt64 / 8

// count returns the product of sizes, which must be ≥ 0 and not overflow.
func count(dev, op string, sizes ...int) (int64, error) {
	n := int64(1)
	for _, s := range sizes {
		if s < 0 {
			return 0, argError(dev, op, "negative size in %v", sizes)
		}
		if s > 0 && n > maxElems/int64(s) {
			return 0, argError(dev, op, "sizes %v overflow", sizes)
		}
		n *= int64(s)
	}
	return n, nil
}

// operand is a named device address of a call.
type operand struct {
	what string
	addr uint64
}

// required checks that the operands' addresses are not 0.
func required(dev, op string, ops ...operand) error {
	for _, o := range ops {
		if o.addr == 0 {
			return argError(dev, op, "%s has address 0", o.what)
		}
	}
	return nil
}

// rowGrid is the number of blocks for one block per item (at least 1).
func rowGrid(items int64) int {
	return int(max(1, min(items, maxBlocks)))
}

func planSoftmax(dev string, dt dtypes.Dtype, dst, src uint64, rows, n int, log bool) (plan[softmaxArgs], error) {
	var p plan[softmaxArgs]
	const op = "Softmax"
	if err := floatDtype(dev, op, dt); err != nil {
		return p, err
	}
	total, err := count(dev, op, rows, n)
	if err != nil || total == 0 {
		return p, err
	}
	if err := required(dev, op, operand{"dst", dst}, operand{"src", src}); err != nil {
		return p, err
	}
	p.prog = program{fam: famSoftmax, out: dt, in: dt}
	if log {
		p.prog.op = 1
	}
	size := int64(dt.Size())
	p.spans = []span{{"src", src, total * size}, {"dst", dst, total * size}}
	p.steps = []step{{"softmax", rowGrid(int64(rows))}}
	p.args = softmaxArgs{dst: dst, src: src, rows: int64(rows), n: int64(n)}
	return p, nil
}

func planLayerNorm(dev string, dt dtypes.Dtype, y, mean, rstd, x, w, b uint64, rows, n int, eps float64) (plan[layerNormArgs], error) {
	var p plan[layerNormArgs]
	const op = "LayerNorm"
	if err := floatDtype(dev, op, dt); err != nil {
		return p, err
	}
	total, err := count(dev, op, rows, n)
	if err != nil || total == 0 { // as kernels.LayerNormRows: an empty row has no statistics to write
		return p, err
	}
	if err := required(dev, op, operand{"y", y}, operand{"mean", mean}, operand{"rstd", rstd}, operand{"x", x}); err != nil {
		return p, err
	}
	size := int64(dt.Size())
	p.prog = program{fam: famLayerNorm, out: dt, in: dt}
	p.spans = []span{{"x", x, total * size}, {"y", y, total * size}, {"mean", mean, int64(rows) * size}, {"rstd", rstd, int64(rows) * size}}
	if w != 0 {
		p.spans = append(p.spans, span{"weight", w, int64(n) * size})
	}
	if b != 0 {
		p.spans = append(p.spans, span{"bias", b, int64(n) * size})
	}
	p.steps = []step{{"layer_norm", rowGrid(int64(rows))}}
	p.args = layerNormArgs{y: y, mean: mean, rstd: rstd, x: x, w: w, b: b, rows: int64(rows), n: int64(n), eps: eps}
	return p, nil
}

func planLayerNormBackward(dev string, dt dtypes.Dtype, dx, dw, db, g, x, mean, rstd, w uint64, rows, n int) (plan[layerNormBackwardArgs], error) {
	var p plan[layerNormBackwardArgs]
	const op = "LayerNormBackward"
	if err := floatDtype(dev, op, dt); err != nil {
		return p, err
	}
	total, err := count(dev, op, rows, n)
	if err != nil || n == 0 {
		return p, err
	}
	if rows > 0 {
		if err := required(dev, op, operand{"g", g}, operand{"x", x}, operand{"mean", mean}, operand{"rstd", rstd}); err != nil {
			return p, err
		}
	}
	size := int64(dt.Size())
	p.prog = program{fam: famLayerNormBackward, out: dt, in: dt}
	p.spans = []span{{"g", g, total * size}, {"x", x, total * size}, {"mean", mean, int64(rows) * size}, {"rstd", rstd, int64(rows) * size}}
	for _, o := range []span{{"weight", w, int64(n) * size}, {"dx", dx, total * size}, {"dw", dw, int64(n) * size}, {"db", db, int64(n) * size}} {
		if o.addr != 0 {
			p.spans = append(p.spans, o)
		}
	}
	// dx row by row; dw and db column by column (with no rows, they are
	// zeros, as kernels.LayerNormBackwardRows clears them).
	if dx != 0 && rows > 0 {
		p.steps = append(p.steps, step{"layer_norm_backward_rows", rowGrid(int64(rows))})
	}
	if dw != 0 || db != 0 {
		p.steps = append(p.steps, step{"layer_norm_backward_cols", rowGrid((int64(n) + colsPerBlock - 1) / colsPerBlock)})
	}
	p.args = layerNormBackwardArgs{dx: dx, dw: dw, db: db, g: g, x: x, mean: mean, rstd: rstd, w: w, rows: int64(rows), n: int64(n)}
	return p, nil
}

// vector checks a per-channel vector of BatchNorm (absent when Addr is 0)
// and returns its kernel argument and its span.
func vector(dev, op, what string, v backend.Strided, channels int64) (vecArg, []span, error) {
	if v.Addr == 0 {
		return vecArg{}, nil, nil
	}
	if err := floatDtype(dev, op, v.Dtype); err != nil {
		return vecArg{}, nil, err
	}
	if len(v.Strides) != 1 || v.Strides[0] < 0 {
		return vecArg{}, nil, argError(dev, op, "%s must be a vector with one stride ≥ 0, got strides %v", what, v.Strides)
	}
	a := vecArg{addr: v.Addr, stride: int64(v.Strides[0])}
	if v.Dtype == dtypes.Float64 {
		a.isDouble = 1
	}
	var sp []span
	if channels > 0 {
		sp = []span{stridedSpan(what, v, []int{int(channels)})}
	}
	return a, sp, nil
}

func planBatchNorm(dev string, a backend.BatchNormArgs) (plan[batchNormArgs], error) {
	var p plan[batchNormArgs]
	const op = "BatchNorm"
	if err := floatDtype(dev, op, a.Dtype); err != nil {
		return p, err
	}
	total, err := count(dev, op, a.Batch, a.Channels, a.Length)
	if err != nil {
		return p, err
	}
	perChannel := int64(a.Batch) * int64(a.Length)
	if a.Training && perChannel <= 1 {
		return p, argError(dev, op, "expected more than 1 value per channel when training, got [%d, %d, %d]", a.Batch, a.Channels, a.Length)
	}
	if !a.Training && (a.RunningMean.Addr == 0 || a.RunningVar.Addr == 0) {
		return p, argError(dev, op, "running_mean and running_var must be present in evaluation")
	}
	c := int64(a.Channels)
	args := batchNormArgs{y: a.Y, x: a.X, batch: int64(a.Batch), channels: c, length: int64(a.Length), momentum: a.Momentum, eps: a.Eps}
	for _, v := range []struct {
		what string
		in   backend.Strided
		out  *vecArg
	}{{"weight", a.Weight, &args.weight}, {"bias", a.Bias, &args.bias}, {"running_mean", a.RunningMean, &args.runningMean}, {"running_var", a.RunningVar, &args.runningVar}} {
		va, sp, err := vector(dev, op, v.what, v.in, c)
		if err != nil {
			return p, err
		}
		*v.out = va
		p.spans = append(p.spans, sp...)
	}
	if a.Training {
		if err := floatDtype(dev, op, a.StatDtype); err != nil {
			return p, err
		}
		args.training = 1
		if a.StatDtype == dtypes.Float64 {
			args.statDouble = 1
		}
		args.saveMean, args.saveInvstd = a.SaveMean, a.SaveInvstd
		for _, s := range []span{{"save_mean", a.SaveMean, c * int64(a.StatDtype.Size())}, {"save_invstd", a.SaveInvstd, c * int64(a.StatDtype.Size())}} {
			if s.addr != 0 {
				p.spans = append(p.spans, s)
			}
		}
	}
	if total == 0 { // as gpukit/tensor: nothing to normalise, no statistics
		p.spans = nil
		return p, nil
	}
	if err := required(dev, op, operand{"x", a.X}, operand{"y", a.Y}); err != nil {
		return p, err
	}
	size := int64(a.Dtype.Size())
	p.spans = append(p.spans, span{"x", a.X, total * size}, span{"y", a.Y, total * size})
	p.prog = program{fam: famBatchNorm, out: a.Dtype, in: a.Dtype}
	p.steps = []step{{"batch_norm", rowGrid(c)}}
	p.args = args
	return p, nil
}

func planBatchNormBackward(dev string, a backend.BatchNormBackwardArgs) (plan[batchNormBackwardArgs], error) {
	var p plan[batchNormBackwardArgs]
	const op = "BatchNormBackward"
	if err := floatDtype(dev, op, a.Dtype); err != nil {
		return p, err
	}
	total, err := count(dev, op, a.Batch, a.Channels, a.Length)
	if err != nil || a.Channels == 0 {
		return p, err
	}
	if a.Stat1.Addr == 0 || a.Stat2.Addr == 0 {
		return p, argError(dev, op, "the statistics (save_mean and save_invstd, or running_mean and running_var) must be present")
	}
	c := int64(a.Channels)
	args := batchNormBackwardArgs{grad: a.Grad, x: a.X, gradX: a.GradX, batch: int64(a.Batch), channels: c, length: int64(a.Length), eps: a.Eps}
	if a.Training {
		args.training = 1
	}
	for _, v := range []struct {
		what string
		in   backend.Strided
		out  *vecArg
	}{{"grad_weight", a.GradWeight, &args.gradWeight}, {"grad_bias", a.GradBias, &args.gradBias}, {"weight", a.Weight, &args.weight}, {"stat1", a.Stat1, &args.stat1}, {"stat2", a.Stat2, &args.stat2}} {
		va, sp, err := vector(dev, op, v.what, v.in, c)
		if err != nil {
			return p, err
		}
		*v.out = va
		p.spans = append(p.spans, sp...)
	}
	if a.GradX == 0 && a.GradWeight.Addr == 0 && a.GradBias.Addr == 0 {
		p.spans = nil
		return p, nil
	}
	if total > 0 {
		if err := required(dev, op, operand{"grad", a.Grad}, operand{"x", a.X}); err != nil {
			return p, err
		}
		size := int64(a.Dtype.Size())
		p.spans = append(p.spans, span{"grad", a.Grad, total * size}, span{"x", a.X, total * size})
		if a.GradX != 0 {
			p.spans = append(p.spans, span{"grad_x", a.GradX, total * size})
		}
	}
	// With no elements per channel, the kernel still runs: dw and db are
	// sums over nothing, 0.
	p.prog = program{fam: famBatchNormBackward, out: a.Dtype, in: a.Dtype}
	p.steps = []step{{"batch_norm_backward", rowGrid(c)}}
	p.args = args
	return p, nil
}

func planNLLLoss(dev string, dt dtypes.Dtype, out, logProbs, targets uint64, targetDt dtypes.Dtype, rows, n int) (plan[nllArgs], error) {
	var p plan[nllArgs]
	const op = "NLLLoss"
	if err := floatDtype(dev, op, dt); err != nil {
		return p, err
	}
	if err := indexDtype(dev, op, "targets", targetDt); err != nil {
		return p, err
	}
	total, err := count(dev, op, rows, n)
	if err != nil {
		return p, err
	}
	if err := required(dev, op, operand{"out", out}); err != nil {
		return p, err
	}
	size := int64(dt.Size())
	p.spans = []span{{"out", out, size}}
	if rows > 0 {
		if err := required(dev, op, operand{"log_probs", logProbs}, operand{"targets", targets}); err != nil {
			return p, err
		}
		p.spans = append(p.spans, span{"log_probs", logProbs, total * size}, span{"targets", targets, int64(rows) * int64(targetDt.Size())})
	}
	// No rows still launches: the mean over nothing is NaN.
	p.prog = program{fam: famNLLLoss, out: dt, in: targetDt}
	p.steps = []step{{"nll_loss", 1}}
	p.args = nllArgs{out: out, logProbs: logProbs, targets: targets, rows: int64(rows), n: int64(n)}
	return p, nil
}

// newAdamArgs computes the step's scalars in float64 as kernels.AdamUpdate
// does; the kernel rounds them to its element type.
func newAdamArgs(p, g, m, v uint64, n int, s ops.AdamScalars) adamArgs {
	bc1 := 1 - math.Pow(s.Beta1, float64(s.Step))
	bc2 := 1 - math.Pow(s.Beta2, float64(s.Step))
	a := adamArgs{
		p: p, g: g, m: m, v: v, n: int64(n),
		decay:         1 - s.LR*s.WeightDecay,
		beta1:         s.Beta1,
		oneMinusBeta1: 1 - s.Beta1,
		beta2:         s.Beta2,
		oneMinusBeta2: 1 - s.Beta2,
		bc2Sqrt:       math.Sqrt(bc2),
		eps:           s.Eps,
		stepSize:      s.LR / bc1,
		weightDecay:   s.WeightDecay,
	}
	if s.Decoupled {
		a.adamW = 1
	} else if s.WeightDecay != 0 {
		a.l2 = 1
	}
	return a
}

func planAdam(dev string, dt dtypes.Dtype, p, g, m, v uint64, n int, sc ops.AdamScalars) (plan[adamArgs], error) {
	var pl plan[adamArgs]
	const op = "Adam"
	if err := floatDtype(dev, op, dt); err != nil {
		return pl, err
	}
	if sc.Step < 1 {
		return pl, argError(dev, op, "step %d: the step count after this step is at least 1", sc.Step)
	}
	total, err := count(dev, op, n)
	if err != nil || total == 0 {
		return pl, err
	}
	if err := required(dev, op, operand{"param", p}, operand{"grad", g}, operand{"exp_avg", m}, operand{"exp_avg_sq", v}); err != nil {
		return pl, err
	}
	size := total * int64(dt.Size())
	pl.prog = program{fam: famAdam, out: dt, in: dt}
	pl.spans = []span{{"param", p, size}, {"grad", g, size}, {"exp_avg", m, size}, {"exp_avg_sq", v, size}}
	pl.steps = []step{{"adam", gridFor(total)}}
	pl.args = newAdamArgs(p, g, m, v, n, sc)
	return pl, nil
}

// checkIndexOperands checks what Gather and ScatterAdd share: the dim, the
// operands' ranks and strides, the dtypes.
func checkIndexOperands(dev, op string, shape []int, dim int, dst, src, index backend.Strided) error {
	ops := map[string]backend.Strided{"dst": dst, "src": src, "index": index}
	if dim < 0 || dim >= len(shape) {
		return argError(dev, op, "dim %d out of range for shape %v", dim, shape)
	}
	for _, what := range []string{"dst", "src", "index"} {
		o := ops[what]
		if len(o.Strides) != len(shape) {
			return argError(dev, op, "%s has %d strides for shape %v", what, len(o.Strides), shape)
		}
		if slices.ContainsFunc(o.Strides, func(s int) bool { return s < 0 }) {
			return argError(dev, op, "%s has a negative stride %v", what, o.Strides)
		}
		if what != "index" && o.Dtype != dst.Dtype {
			return argError(dev, op, "dst and src dtypes differ (%v, %v)", dst.Dtype, src.Dtype)
		}
	}
	return indexDtype(dev, op, "index", index.Dtype)
}

// requiredIndexOperands checks that Gather's and ScatterAdd's addresses
// are not 0.
func requiredIndexOperands(dev, op string, dst, src, index backend.Strided) error {
	return required(dev, op, operand{"dst", dst.Addr}, operand{"src", src.Addr}, operand{"index", index.Addr})
}

// stridedSpan is the span of operand o over shape.
func stridedSpan(what string, o backend.Strided, shape []int) span {
	return span{what, o.Addr, extent(shape, o.Strides) * int64(o.Dtype.Size())}
}

func planGather(dev string, shape []int, dim int, dst, src, index backend.Strided) (plan[indexArgs], error) {
	var p plan[indexArgs]
	const op = "Gather"
	if _, err := storageType(dst.Dtype); err != nil {
		return p, &backend.UnsupportedError{Backend: dev, Op: op, Dtype: dst.Dtype}
	}
	if err := checkIndexOperands(dev, op, shape, dim, dst, src, index); err != nil {
		return p, err
	}
	// src with no stride along dim: the index says where to read there.
	srcAt := src
	srcAt.Strides = slices.Clone(src.Strides)
	srcAt.Strides[dim] = 0
	ea, err := newElementwiseArgs(shape, dst, srcAt, index)
	if err != nil {
		return p, argError(dev, op, "%v", err)
	}
	if ea.n == 0 {
		return p, nil
	}
	if err := requiredIndexOperands(dev, op, dst, src, index); err != nil {
		return p, err
	}
	// src's size along dim is not known here: its span is the first slice
	// along dim, and the index values, which the caller checks, say the rest.
	p.spans = []span{
		stridedSpan("dst", dst, shape),
		stridedSpan("index", index, shape),
		stridedSpan("src", srcAt, shape),
	}
	p.prog = program{fam: famGather, out: dst.Dtype, in: index.Dtype}
	p.steps = []step{{"gather", gridFor(ea.n)}}
	p.args = indexArgs{dst: dst.Addr, src: src.Addr, index: index.Addr, n: ea.n, srcStep: int64(src.Strides[dim]), l: ea.l}
	return p, nil
}

func planScatterAdd(dev string, shape []int, dim int, dst, index, src backend.Strided) (plan[indexArgs], error) {
	var p plan[indexArgs]
	const op = "ScatterAdd"
	if err := floatDtype(dev, op, dst.Dtype); err != nil {
		return p, err
	}
	if err := checkIndexOperands(dev, op, shape, dim, dst, src, index); err != nil {
		return p, err
	}
	for d, s := range shape {
		if d != dim && s > 1 && dst.Strides[d] == 0 {
			return p, argError(dev, op, "dst broadcasts along dimension %d (strides %v): its lines would overlap", d, dst.Strides)
		}
	}
	// One thread per line along dim: the layout is the index's shape with
	// dim set to 1.
	lines := slices.Clone(shape)
	lines[dim] = 1
	ea, err := newElementwiseArgs(lines, dst, src, index)
	if err != nil {
		return p, argError(dev, op, "%v", err)
	}
	if ea.n == 0 || shape[dim] == 0 {
		return p, nil
	}
	if err := requiredIndexOperands(dev, op, dst, src, index); err != nil {
		return p, err
	}
	p.spans = []span{
		stridedSpan("index", index, shape),
		stridedSpan("src", src, shape),
		stridedSpan("dst", dst, lines), // the first slice along dim, as for Gather's src
	}
	p.prog = program{fam: famScatterAdd, out: dst.Dtype, in: index.Dtype}
	p.steps = []step{{"scatter_add", gridFor(ea.n)}}
	p.args = indexArgs{
		dst: dst.Addr, src: src.Addr, index: index.Addr, n: ea.n, lineLen: int64(shape[dim]),
		dstStep: int64(dst.Strides[dim]), srcStep: int64(src.Strides[dim]), indexStep: int64(index.Strides[dim]), l: ea.l,
	}
	return p, nil
}

// csrEntry are the entry points of the sparse products (rows.cu,
// KERNEL_CSR), by Compute method.
var csrEntry = map[string]string{"CSRMatmul": "csr_matmul", "CSRMatmulT": "csr_matmul_t", "CSRSampledDot": "csr_sampled_dot"}

// planCSR plans one of the sparse products (op: a Compute method name): x
// is the first dense operand (b, g, g) and y CSRSampledDot's b. The CSR
// structure is trusted (the caller checks it); the kernels skip an entry
// whose column is out of range and clamp row offsets to [0, nnz] rather
// than read out of bounds.
func planCSR(dev, op string, dt dtypes.Dtype, a backend.CSR, x, y, out uint64, n int) (plan[csrArgs], error) {
	var p plan[csrArgs]
	if err := floatDtype(dev, op, dt); err != nil {
		return p, err
	}
	if err := indexDtype(dev, op, "indices", a.Index); err != nil {
		return p, err
	}
	for _, sizes := range [][]int{{a.Rows, n}, {a.Cols, n}, {a.NNZ}, {a.Rows + 1}} {
		if _, err := count(dev, op, sizes...); err != nil {
			return p, err
		}
	}
	size, isize := int64(dt.Size()), int64(a.Index.Size())
	rows, k, nnz, nn := int64(a.Rows), int64(a.Cols), int64(a.NNZ), int64(n)
	// The dense operands and the output, in elements; a zero count needs
	// no address.
	type dense struct {
		what  string
		addr  uint64
		elems int64
	}
	var ds []dense
	switch op {
	case "CSRMatmul":
		ds = []dense{{"out", out, rows * nn}, {"b", x, k * nn}, {"values", a.Values, nnz}}
	case "CSRMatmulT":
		ds = []dense{{"out", out, k * nn}, {"g", x, rows * nn}, {"values", a.Values, nnz}}
	case "CSRSampledDot":
		ds = []dense{{"out", out, nnz}, {"g", x, rows * nn}, {"b", y, k * nn}}
	default:
		return p, argError(dev, op, "not a sparse product")
	}
	if ds[0].elems == 0 { // nothing to write
		return p, nil
	}
	p.spans = []span{{"row_offsets", a.RowOffsets, (rows + 1) * isize}}
	ops := []operand{{"row_offsets", a.RowOffsets}}
	if nnz > 0 {
		p.spans = append(p.spans, span{"col_indices", a.ColIndices, nnz * isize})
		ops = append(ops, operand{"col_indices", a.ColIndices})
	}
	for _, d := range ds {
		if d.elems > 0 {
			p.spans = append(p.spans, span{d.what, d.addr, d.elems * size})
			ops = append(ops, operand{d.what, d.addr})
		}
	}
	if err := required(dev, op, ops...); err != nil {
		return p, err
	}
	p.prog = program{fam: famCSR, out: dt, in: a.Index}
	items := rows // one block per row of a; CSRMatmulT: per column
	if op == "CSRMatmulT" {
		items = k
	}
	p.steps = []step{{csrEntry[op], rowGrid(items)}}
	p.args = csrArgs{out: out, vals: a.Values, cols: a.ColIndices, offs: a.RowOffsets, x: x, y: y, rows: rows, k: k, nnz: nnz, n: nn}
	return p, nil
}
