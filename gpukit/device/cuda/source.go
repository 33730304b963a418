//go:build cuda || nvrtc

package cuda

// This file holds what the compute kernels need that does not touch the
// driver: the CUDA C sources, the #defines that specialise them per op and
// dtype, and the kernel arguments as Go structs laid out like the C ones.
// It builds with the cuda tag (compute.go uses it) and with the nvrtc tag,
// under which nvrtc_test.go compiles every specialisation with NVRTC and
// checks the layouts: NVRTC needs no GPU, so that check runs in CI.

import (
	_ "embed"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unsafe"

	"github.com/gpumem/course/gpukit/device/backend"
	"github.com/gpumem/course/gpukit/dtypes"
	"github.com/gpumem/course/gpukit/ops"
)

//go:embed elementwise.cu
var elementwiseSource string

//go:embed reduce.cu
var reduceSource string

//go:embed layout.cuh
var layoutSource string

//go:embed dtype.cuh
var dtypeSource string

//go:embed rows.cu
var rowsSource string

//go:embed index.cu
var indexSource string

// maxDims is the rank limit of elementwise operands after mergeDims
// (MAX_DIMS in elementwise.cu).
const maxDims = 8

// blockSize is the number of threads per block of every kernel (BLOCK in
// reduce.cu).
const blockSize = 256

// maxBlocks bounds the grid; the kernels loop (grid-stride) over the rest.
const maxBlocks = 1 << 16

// maxOperands is the number of operands a layout describes (MAX_OPERANDS
// in layout.cuh): out and up to three inputs (Where's cond, a and b).
const maxOperands = 4

// layoutArg is struct Layout of layout.cuh.
type layoutArg struct {
	ndim    int64
	shape   [maxDims]int64
	strides [maxOperands][maxDims]int64
}

// elementwiseArgs is struct Args of elementwise.cu.
type elementwiseArgs struct {
	out, a, b, c uint64
	n            int64
	scalar       float64 // Fill's value, BinaryScalar's scalar, InRange's lo
	scalar2      float64 // InRange's hi
	scalarMode   int64   // 0: b is a tensor, 1: b is the scalar, 2: a is the scalar
	l            layoutArg
}

// reduceArgs is struct Args of reduce.cu.
type reduceArgs struct {
	dst, index, src     uint64
	outer, n, innerSize int64
}

// family is a kernel source and entry point.
type family uint8

const (
	famConvert family = iota // fill and the copies into out (from every dtype)
	famUnary                 // every unary op on in (out = in)
	famBinary                // every binary op on in; out = in, or Bool for the comparisons
	famWhere                 // out: the operands' dtype
	famInRange               // in: the source's dtype (out is Bool)
	famReduce
	famArgReduce
	famSoftmax // op 1: log-softmax
	famLayerNorm
	famLayerNormBackward
	famBatchNorm
	famBatchNormBackward
	famNLLLoss // in: the targets' dtype
	famAdam
	famGather     // out: the data's dtype (any), in: the index's
	famScatterAdd // in: the index's dtype
	famCSR        // the sparse products; in: the indices' dtype
)

// rowFamilies are the families of rows.cu and index.cu: their name (that
// of the program and of the KERNEL_ macro that selects it) and entry points.
var rowFamilies = map[family]struct {
	name    string
	entries []string
}{
	famSoftmax:           {"softmax", []string{"softmax"}},
	famLayerNorm:         {"layer_norm", []string{"layer_norm"}},
	famLayerNormBackward: {"layer_norm_backward", []string{"layer_norm_backward_rows", "layer_norm_backward_cols"}},
	famBatchNorm:         {"batch_norm", []string{"batch_norm"}},
	famBatchNormBackward: {"batch_norm_backward", []string{"batch_norm_backward"}},
	famNLLLoss:           {"nll_loss", []string{"nll_loss"}},
	famAdam:              {"adam", []string{"adam"}},
	famGather:            {"gather", []string{"gather"}},
	famScatterAdd:        {"scatter_add", []string{"scatter_add"}},
	famCSR:               {"csr", []string{"csr_matmul", "csr_matmul_t", "csr_sampled_dot"}},
}

// indexed reports whether the family's in dtype is an index dtype.
func (f family) indexed() bool {
	return f == famNLLLoss || f == famGather || f == famScatterAdd || f == famCSR
}

// program identifies one NVRTC compilation: a kernel family specialised to
// its element types (and, for reductions, one op). Compiled modules are
// cached by program. The elementwise families hold every op of their kind
// as an entry point each (unaryEntry, binaryEntry, copyEntry), so that one
// compilation per dtype serves them all.
type program struct {
	fam     family
	op      uint8 // ops.Reduce; argReduce: 1 = largest; softmax: 1 = log
	out, in dtypes.Dtype
}

func (p program) String() string {
	if f, ok := rowFamilies[p.fam]; ok {
		name := f.name
		if p.fam == famSoftmax && p.op == 1 {
			name = "log_softmax"
		}
		if p.fam.indexed() {
			return fmt.Sprintf("%s_%s_%s", name, p.out, p.in)
		}
		return name + "_" + p.out.String()
	}
	var op string
	switch p.fam {
	case famConvert:
		return "convert_" + p.out.String()
	case famUnary:
		return "unary_" + p.in.String()
	case famBinary:
		op = "binary"
	case famWhere:
		return "where_" + p.out.String()
	case famInRange:
		return "in_range_" + p.in.String()
	case famReduce:
		op = ops.Reduce(p.op).String()
	case famArgReduce:
		op = "ArgMin"
		if p.op == 1 {
			op = "ArgMax"
		}
	}
	if p.in != p.out {
		return fmt.Sprintf("%s_%s_%s", strings.ToLower(op), p.in, p.out)
	}
	return fmt.Sprintf("%s_%s", strings.ToLower(op), p.out)
}

// unaryExpr is the expression of each ops.Unary in x, of type TC
// (float or double: the overloads of the CUDA math library pick expf for
// float and exp for double). Each follows kernels.ApplyUnary: the same
// formula, special values and type (the derivatives of sigmoid and tanh
// in double); elementwise.cu has the helpers gk_*. Gelu is x·Φ(x) with Φ
// from erfc, which does not cancel for x < 0; GeluDeriv Φ(x) + x·φ(x)
// with kernels' fused multiply-add.
var unaryExpr = map[ops.Unary]string{
	ops.Identity:       "x",
	ops.Neg:            "-x",
	ops.Abs:            "fabs(x)",
	ops.Square:         "x * x",
	ops.Sqrt:           "sqrt(x)",
	ops.Reciprocal:     "(TC)1 / x",
	ops.Exp:            "exp(x)",
	ops.Log:            "log(x)",
	ops.Sin:            "sin(x)",
	ops.Cos:            "cos(x)",
	ops.Relu:           "x != x ? x : (x > (TC)0 ? x : (TC)0)", // NaN stays NaN
	ops.Sigmoid:        "gk_sigmoid(x)",
	ops.Tanh:           "tanh(x)",
	ops.Gelu:           "(TC)0.5 * x * erfc(-x * (TC)GK_SQRT1_2)",
	ops.GeluDeriv:      "fma(x, exp((TC)-0.5 * x * x) * (TC)GK_INV_SQRT_2PI, (TC)0.5 * erfc(-x * (TC)GK_SQRT1_2))",
	ops.GeluTanhApprox: "gk_gelu_tanh(x)",
	ops.GeluTanhDeriv:  "gk_gelu_tanh_grad(x)",
	ops.SigmoidDeriv:   "(TC)((double)x * (1.0 - (double)x))",
	ops.TanhDeriv:      "(TC)(1.0 - (double)x * (double)x)",
	ops.Sign:           "x > (TC)0 ? (TC)1 : (x < (TC)0 ? (TC)-1 : (TC)0)", // NaN and ±0 give +0
}

// binaryExpr is the expression of each ops.Binary in a and b, of
// type TC, as kernels.ApplyBinary. Max and Min are NaN if either operand is, and
// max(+0, −0) is +0 and min −0, as Go's max and min.
var binaryExpr = map[ops.Binary]string{
	ops.Add:               "a + b",
	ops.Sub:               "a - b",
	ops.Mul:               "a * b",
	ops.Div:               "a / b",
	ops.Max:               "(a != a || b != b) ? a + b : (a > b ? a : (a < b ? b : (a == (TC)0 ? a + b : a)))",
	ops.Min:               "(a != a || b != b) ? a + b : (a < b ? a : (a > b ? b : (a == (TC)0 ? -(-a - b) : a)))",
	ops.Pow:               "(TC)pow((double)a, (double)b)", // in double, as kernels.ApplyBinary
	ops.Greater:           "a > b ? (TC)1 : (TC)0",
	ops.Less:              "a < b ? (TC)1 : (TC)0",
	ops.Equal:             "a == b ? (TC)1 : (TC)0",
	ops.ThresholdBackward: "b <= (TC)0 ? (TC)0 : a", // a NaN in b passes a
	ops.GreaterEqual:      "a >= b ? (TC)1 : (TC)0",
	ops.LessEqual:         "a <= b ? (TC)1 : (TC)0",
	// The backward ops, a times the derivative's expression in b, the
	// derivative rounded to TC first (kernels.ApplyBinary).
	ops.GeluBackward:     backwardExpr(ops.GeluBackward),
	ops.GeluTanhBackward: backwardExpr(ops.GeluTanhBackward),
	ops.SigmoidBackward:  backwardExpr(ops.SigmoidBackward),
	ops.TanhBackward:     backwardExpr(ops.TanhBackward),
}

// unaryArg is the operand x of an expression of unaryExpr.
var unaryArg = regexp.MustCompile(`\bx\b`)

// backwardExpr is a backward op's expression: a · (TC)(f′(b)), f′ being
// unaryExpr's expression of its Derivative with b for x.
func backwardExpr(op ops.Binary) string {
	u, _ := op.Derivative()
	return "a * (TC)(" + unaryArg.ReplaceAllString(unaryExpr[u], "b") + ")"
}

// unaryEntry, binaryEntry and copyEntry name the entry points of the
// elementwise families.
func unaryEntry(op ops.Unary) string     { return "unary_" + strings.ToLower(op.String()) }
func binaryEntry(op ops.Binary) string   { return "binary_" + strings.ToLower(op.String()) }
func copyEntry(from dtypes.Dtype) string { return "copy_from_" + from.String() }

// allDtypes are the dtypes of backend.Compute, in order.
var allDtypes = backend.Dtypes

// arithmetic reports whether the unary and binary kernels compute in d:
// every dtype but Bool (float32 and the 16-bit floats in float32, the
// others in float64, as cpucompute).
func arithmetic(d dtypes.Dtype) bool {
	return d <= dtypes.Int32
}

// reducible reports whether the reductions take d: the floats.
func reducible(d dtypes.Dtype) bool {
	return d <= dtypes.BFloat16
}

// wideType is the type the kernels compute d in (TC, TW).
func wideType(d dtypes.Dtype) string {
	if d == dtypes.Float32 || d == dtypes.Float16 || d == dtypes.BFloat16 {
		return "float"
	}
	return "double"
}

var reduceMacro = map[ops.Reduce]string{
	ops.ReduceSum:  "REDUCE_SUM",
	ops.ReduceMean: "REDUCE_MEAN",
	ops.ReduceMax:  "REDUCE_MAX",
	ops.ReduceMin:  "REDUCE_MIN",
}

func cType(d dtypes.Dtype) (string, error) {
	switch d {
	case dtypes.Float32:
		return "float", nil
	case dtypes.Float64:
		return "double", nil
	}
	return "", fmt.Errorf("cuda: no kernels for %v (float32 and float64 only)", d)
}

// storageType is a C type of d's size, for kernels that only move
// elements (gather, where).
func storageType(d dtypes.Dtype) (string, error) {
	switch d {
	case dtypes.Float32, dtypes.Float64:
		return cType(d)
	case dtypes.Int64:
		return "long long", nil
	case dtypes.Int32:
		return "int", nil
	case dtypes.Float16, dtypes.BFloat16:
		return "unsigned short", nil
	case dtypes.Bool:
		return "unsigned char", nil
	}
	return "", fmt.Errorf("cuda: unknown %v", d)
}

// layoutAsserts returns a GO_FIELD(cStruct, field, offset, size) for each
// field of the Go struct v, whose C twin cStruct names its fields in snake
// case (logProbs: log_probs). fieldMacro defines GO_FIELD: NVRTC has no
// offsetof, so there it checks each field's name and size; a host
// compiler (the emulation test) checks the offsets too.
func layoutAsserts(v any, cStruct string) string {
	t := reflect.TypeOf(v)
	var b strings.Builder
	for i := range t.NumField() {
		f := t.Field(i)
		fmt.Fprintf(&b, "GO_FIELD(%s, %s, %d, %d) ", cStruct, snakeCase(f.Name), f.Offset, f.Type.Size())
	}
	return b.String()
}

const fieldMacro = `#ifdef __CUDACC_RTC__
#define GO_FIELD(S, f, off, size) static_assert(sizeof(S::f) == size, #S "." #f " does not match its Go twin");
#else
#include <cstddef>
#define GO_FIELD(S, f, off, size) static_assert(offsetof(S, f) == off && sizeof(S::f) == size, #S "." #f " does not match its Go twin");
#endif
`

// snakeCase turns a Go field name such as oneMinusBeta1 into one_minus_beta1.
func snakeCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// indexType is the C type of an index dtype.
func indexType(d dtypes.Dtype) (string, error) {
	switch d {
	case dtypes.Int64:
		return "long long", nil
	case dtypes.Int32:
		return "int", nil
	}
	return "", fmt.Errorf("cuda: %v is not an index dtype (int64, int32)", d)
}

// rowSource is source for the families of rows.cu and index.cu.
func (p program) rowSource() (src string, entries []string, err error) {
	f := rowFamilies[p.fam]
	var t string
	if p.fam == famGather {
		t, err = storageType(p.out)
	} else {
		t, err = cType(p.out)
	}
	if err != nil {
		return "", nil, err
	}
	var defs []string
	def := func(name, value string) { defs = append(defs, "#define "+name+" "+value) }
	def("T", t)
	def("BLOCK", fmt.Sprint(blockSize))
	if p.fam.indexed() {
		it, err := indexType(p.in)
		if err != nil {
			return "", nil, err
		}
		def("TINDEX", it)
	} else if p.in != p.out {
		return "", nil, fmt.Errorf("cuda: %s does not convert (%v to %v)", f.name, p.in, p.out)
	}
	name := f.name
	if p.fam == famSoftmax && p.op == 1 {
		name = "log_softmax"
	}
	def("KERNEL_"+strings.ToUpper(name), "1")
	var args any
	switch p.fam {
	case famSoftmax:
		args = softmaxArgs{}
	case famLayerNorm:
		args = layerNormArgs{}
	case famLayerNormBackward:
		args = layerNormBackwardArgs{}
		def("COLS", fmt.Sprint(colsPerBlock))
	case famBatchNorm:
		args = batchNormArgs{}
	case famBatchNormBackward:
		args = batchNormBackwardArgs{}
	case famNLLLoss:
		args = nllArgs{}
	case famAdam:
		args = adamArgs{}
	case famGather, famScatterAdd:
		args = indexArgs{}
	case famCSR:
		args = csrArgs{}
	}
	def("GO_SIZEOF_ARGS", fmt.Sprint(reflect.TypeOf(args).Size()))
	def("GO_ARGS_LAYOUT", layoutAsserts(args, "Args"))
	def("GO_VEC_LAYOUT", layoutAsserts(vecArg{}, "Vec"))
	body := "#line 1 \"rows.cu\"\n" + rowsSource
	if p.fam == famGather || p.fam == famScatterAdd {
		body = "#line 1 \"layout.cuh\"\n" + layoutSource + "#line 1 \"index.cu\"\n" + indexSource
	}
	return "// " + p.String() + "\n" + strings.Join(defs, "\n") + "\n" + fieldMacro + body, f.entries, nil
}

// source returns the CUDA C source of p (the family's .cu file after the
// #defines that specialise it) and the names of its entry points.
func (p program) source() (src string, entries []string, err error) {
	if _, ok := rowFamilies[p.fam]; ok {
		return p.rowSource()
	}
	for _, d := range []dtypes.Dtype{p.out, p.in} {
		if !slices.Contains(allDtypes, d) {
			return "", nil, fmt.Errorf("cuda: unknown %v", d)
		}
	}
	var defs, lines []string
	def := func(name, value string) { defs = append(defs, "#define "+name+" "+value) }
	io := func(out, in dtypes.Dtype) {
		def("TOUT", "gk_"+out.String()+"_t")
		def("TIN", "gk_"+in.String()+"_t")
		def("TC", wideType(in))
		def("LOAD_IN(x)", "gk_load_"+in.String()+"(x)")
		def("STORE_OUT(v)", "gk_store_"+out.String()+"(v)")
	}
	switch p.fam {
	case famConvert, famUnary, famBinary, famWhere, famInRange:
		def("GO_SIZEOF_ARGS", fmt.Sprint(unsafe.Sizeof(elementwiseArgs{})))
		def("GO_ARGS_LAYOUT", layoutAsserts(elementwiseArgs{}, "Args"))
		switch p.fam {
		case famConvert:
			def("KERNEL_CONVERT", "1")
			io(p.out, p.out)
			entries = []string{"fill"}
			for _, from := range allDtypes {
				if from == p.out {
					lines = append(lines, "COPY_SAME("+from.String()+")")
				} else {
					lines = append(lines, "COPY_FROM("+from.String()+")")
				}
				entries = append(entries, copyEntry(from))
			}
		case famUnary:
			if p.in != p.out || !arithmetic(p.in) {
				return "", nil, fmt.Errorf("cuda: no unary kernels from %v to %v", p.in, p.out)
			}
			def("KERNEL_UNARY", "1")
			io(p.out, p.in)
			for _, op := range ops.Unaries() {
				e, ok := unaryExpr[op]
				if !ok {
					break
				}
				lines = append(lines, fmt.Sprintf("UNARY(%s, %s)", strings.TrimPrefix(unaryEntry(op), "unary_"), e))
				entries = append(entries, unaryEntry(op))
			}
		case famBinary:
			if !arithmetic(p.in) || (p.out != p.in && p.out != dtypes.Bool) {
				return "", nil, fmt.Errorf("cuda: no binary kernels from %v to %v", p.in, p.out)
			}
			def("KERNEL_BINARY", "1")
			io(p.out, p.in)
			for _, op := range ops.Binaries() {
				e, ok := binaryExpr[op]
				if !ok {
					break
				}
				if p.out != p.in && !op.Comparison() {
					continue
				}
				lines = append(lines, fmt.Sprintf("BINARY(%s, %s)", strings.TrimPrefix(binaryEntry(op), "binary_"), e))
				entries = append(entries, binaryEntry(op))
			}
		case famWhere:
			t, err := storageType(p.out)
			if err != nil {
				return "", nil, err
			}
			def("KERNEL_WHERE", "1")
			def("T", t)
			entries = []string{"where"}
		case famInRange:
			def("KERNEL_IN_RANGE", "1")
			io(dtypes.Bool, p.in)
			entries = []string{"in_range"}
		}
		src = "#line 1 \"elementwise.cu\"\n" + elementwiseSource + "#line 1 \"" + p.String() + "\"\n" + strings.Join(lines, "\n") + "\n"
		src = "#line 1 \"layout.cuh\"\n" + layoutSource + "#line 1 \"dtype.cuh\"\n" + dtypeSource + fieldMacro + src
	case famReduce, famArgReduce:
		if p.in != p.out || !reducible(p.out) {
			return "", nil, fmt.Errorf("cuda: no reduction from %v to %v", p.in, p.out)
		}
		def("T", "gk_"+p.out.String()+"_t")
		def("TW", wideType(p.out))
		def("LOAD_T(x)", "gk_load_"+p.out.String()+"(x)")
		def("STORE_T(v)", "gk_store_"+p.out.String()+"(v)")
		def("BLOCK", fmt.Sprint(blockSize))
		def("GO_SIZEOF_ARGS", fmt.Sprint(unsafe.Sizeof(reduceArgs{})))
		if p.fam == famArgReduce {
			if p.op == 1 {
				def("REDUCE_ARGMAX", "1")
			} else {
				def("REDUCE_ARGMIN", "1")
			}
		} else {
			m, ok := reduceMacro[ops.Reduce(p.op)]
			if !ok {
				return "", nil, fmt.Errorf("cuda: no kernel for %v", ops.Reduce(p.op))
			}
			def(m, "1")
		}
		entries = []string{"reduce_rows", "reduce_cols"}
		src = "#line 1 \"dtype.cuh\"\n" + dtypeSource + "#line 1 \"reduce.cu\"\n" + reduceSource
	default:
		return "", nil, fmt.Errorf("cuda: unknown kernel family %d", p.fam)
	}
	return "// " + p.String() + "\n" + strings.Join(defs, "\n") + "\n" + src, entries, nil
}

// mergeDims drops dimensions of size 1 and merges neighbouring dimensions
// that are contiguous with each other in every operand, so that a dense
// N-d operation becomes 1-d and most broadcasts 2-d. It returns the merged
// shape and the strides of each operand; a 0-d result is one element.
func mergeDims(shape []int, strides ...[]int) ([]int, [][]int) {
	outShape := []int{}
	outStrides := make([][]int, len(strides))
	for d := len(shape) - 1; d >= 0; d-- { // innermost first
		if shape[d] == 1 {
			continue
		}
		last := len(outShape) - 1
		merge := last >= 0
		for i, st := range strides {
			if merge && st[d] != outStrides[i][last]*outShape[last] {
				merge = false
			}
			_ = i
		}
		if merge {
			outShape[last] *= shape[d]
			continue
		}
		outShape = append(outShape, shape[d])
		for i, st := range strides {
			outStrides[i] = append(outStrides[i], st[d])
		}
	}
	// Back to outermost first.
	for i, j := 0, len(outShape)-1; i < j; i, j = i+1, j-1 {
		outShape[i], outShape[j] = outShape[j], outShape[i]
		for k := range outStrides {
			outStrides[k][i], outStrides[k][j] = outStrides[k][j], outStrides[k][i]
		}
	}
	for k := range outStrides {
		if outStrides[k] == nil {
			outStrides[k] = []int{}
		}
	}
	return outShape, outStrides
}

// newElementwiseArgs checks the operands against shape and packs them
// (at most four: out, then the inputs) into the kernel's argument.
func newElementwiseArgs(shape []int, ops ...backend.Strided) (elementwiseArgs, error) {
	var args elementwiseArgs
	if len(ops) > maxOperands {
		return args, fmt.Errorf("%d operands, more than the kernels' %d", len(ops), maxOperands)
	}
	n := 1
	for _, s := range shape {
		if s < 0 {
			return args, fmt.Errorf("negative size in shape %v", shape)
		}
		n *= s
	}
	strides := make([][]int, len(ops))
	for i, op := range ops {
		if len(op.Strides) != len(shape) {
			return args, fmt.Errorf("operand %d has %d strides for shape %v", i, len(op.Strides), shape)
		}
		for _, s := range op.Strides {
			if s < 0 {
				return args, fmt.Errorf("operand %d has a negative stride %v", i, op.Strides)
			}
		}
		strides[i] = op.Strides
	}
	ms, mst := mergeDims(shape, strides...)
	if len(ms) > maxDims {
		return args, fmt.Errorf("shape %v has %d dimensions that do not merge, more than the kernels' %d", shape, len(ms), maxDims)
	}
	args.n = int64(n)
	args.l.ndim = int64(len(ms))
	for d, s := range ms {
		args.l.shape[d] = int64(s)
		for i := range ops {
			args.l.strides[i][d] = int64(mst[i][d])
		}
	}
	addrs := []*uint64{&args.out, &args.a, &args.b, &args.c}
	for i, op := range ops {
		*addrs[i] = op.Addr
	}
	return args, nil
}

// compileOptions are the NVRTC options for a device of compute capability
// arch (such as 75 for compute_75). C++17 rather than 14: CUDA 13's own
// headers (CCCL) need it, and NVRTC has accepted it since CUDA 11.
// The math is Go's: --fmad=false makes a*b + c two roundings, as in the
// Go kernels the results are checked against (an explicit fma() is still
// one), and division, square root and subnormals stay IEEE (NVRTC's
// defaults, spelled out).
func compileOptions(arch int) []string {
	return []string{fmt.Sprintf("--gpu-architecture=compute_%d", arch), "--std=c++17",
		"--fmad=false", "--prec-div=true", "--prec-sqrt=true", "--ftz=false"}
}

// allPrograms lists every program the backend may compile, for the NVRTC
// test.
func allPrograms() []program {
	var ps []program
	for _, dt := range allDtypes {
		ps = append(ps, program{fam: famConvert, out: dt, in: dt},
			program{fam: famWhere, out: dt, in: dt},
			program{fam: famInRange, out: dtypes.Bool, in: dt})
		if arithmetic(dt) {
			ps = append(ps, program{fam: famUnary, out: dt, in: dt},
				program{fam: famBinary, out: dt, in: dt},
				program{fam: famBinary, out: dtypes.Bool, in: dt})
		}
		if reducible(dt) {
			for op := range reduceMacro {
				ps = append(ps, program{fam: famReduce, op: uint8(op), out: dt, in: dt})
			}
			ps = append(ps, program{fam: famArgReduce, op: 0, out: dt, in: dt}, program{fam: famArgReduce, op: 1, out: dt, in: dt})
		}
		// Gather moves elements of any dtype.
		for _, idx := range []dtypes.Dtype{dtypes.Int64, dtypes.Int32} {
			ps = append(ps, program{fam: famGather, out: dt, in: idx})
		}
	}
	for _, dt := range []dtypes.Dtype{dtypes.Float32, dtypes.Float64} {
		for _, f := range []family{famLayerNorm, famLayerNormBackward, famBatchNorm, famBatchNormBackward, famAdam} {
			ps = append(ps, program{fam: f, out: dt, in: dt})
		}
		ps = append(ps, program{fam: famSoftmax, out: dt, in: dt}, program{fam: famSoftmax, op: 1, out: dt, in: dt})
		for _, idx := range []dtypes.Dtype{dtypes.Int64, dtypes.Int32} {
			ps = append(ps, program{fam: famNLLLoss, out: dt, in: idx}, program{fam: famScatterAdd, out: dt, in: idx},
				program{fam: famCSR, out: dt, in: idx})
		}
	}
	return ps
}

// extent is the number of elements spanned by a view of shape with
// strides ≥ 0 (0 for an empty view). A span too large for an int64 count
// of bytes is maxElems, which no allocation holds.
func extent(shape, strides []int) int64 {
	if slices.Contains(shape, 0) {
		return 0
	}
	n := int64(1)
	for d, s := range shape {
		step := int64(strides[d])
		if s > 1 && step > 0 && step > (maxElems-n)/int64(s-1) {
			return maxElems
		}
		n += int64(s-1) * step
	}
	return n
}

// gridFor is the number of blocks for n independent items (at least 1).
func gridFor(n int64) int {
	g := (n + blockSize - 1) / blockSize
	return int(max(1, min(g, maxBlocks)))
}
