// Package ops is gpukit's vocabulary of kernel operations, shared by every
// floor: gpukit/tensor names the op it wants, the Compute interface of the
// backends carries it, and the kernels (CPU and CUDA) implement it. It is
// a leaf: it imports nothing of gpukit.
//
// Each enum's properties are a table (the unary, binary and reduce tables
// below), not the order of its constants, so that a new op is one row;
// the one exception, said where it is, is the codes the assembly reads.
package ops

import "fmt"

// Unary selects the function of an elementwise unary kernel.
type Unary uint8

const (
	Identity       Unary = iota // x (a strided copy)
	Neg                         // -x
	Abs                         // |x|
	Square                      // x²
	Sqrt                        // √x
	Reciprocal                  // 1/x
	Exp                         // eˣ
	Log                         // ln x
	Sin                         // sin x
	Cos                         // cos x
	Relu                        // max(x, 0)
	Sigmoid                     // 1/(1+e⁻ˣ)
	Tanh                        // tanh x
	Gelu                        // x·Φ(x) with the exact erf form (PyTorch's default)
	GeluDeriv                   // Φ(x) + x·φ(x): the derivative of Gelu
	GeluTanhApprox              // GELU's tanh form, ½x(1 + tanh(√(2/π)(x + 0.044715x³)))
	GeluTanhDeriv               // the derivative of GeluTanhApprox
	SigmoidDeriv                // y·(1−y) of a sigmoid's output y, computed in float64
	TanhDeriv                   // 1−y² of a tanh's output y, computed in float64
	Sign                        // 1 for x > 0, −1 for x < 0, else 0 (NaN gives 0)
)

// unary is each unary op's name and whether it is transcendental (a few
// nanoseconds per element, where the others are memory-bound copies).
var unary = [...]struct {
	name           string
	transcendental bool
}{
	Identity:       {"Identity", false},
	Neg:            {"Neg", false},
	Abs:            {"Abs", false},
	Square:         {"Square", false},
	Sqrt:           {"Sqrt", false},
	Reciprocal:     {"Reciprocal", false},
	Exp:            {"Exp", true},
	Log:            {"Log", true},
	Sin:            {"Sin", true},
	Cos:            {"Cos", true},
	Relu:           {"Relu", false},
	Sigmoid:        {"Sigmoid", true},
	Tanh:           {"Tanh", true},
	Gelu:           {"Gelu", true},
	GeluDeriv:      {"GeluDeriv", true},
	GeluTanhApprox: {"GeluTanhApprox", true},
	GeluTanhDeriv:  {"GeluTanhDeriv", true},
	SigmoidDeriv:   {"SigmoidDeriv", true},
	TanhDeriv:      {"TanhDeriv", true},
	Sign:           {"Sign", false},
}

// Unaries lists the unary ops in order.
func Unaries() []Unary { return upTo[Unary](len(unary)) }

// Valid reports whether op is one of the unary ops above.
func (op Unary) Valid() bool { return int(op) < len(unary) }

func (op Unary) String() string {
	if op.Valid() {
		return unary[op].name
	}
	return fmt.Sprintf("UnaryOp(%d)", uint8(op))
}

// Transcendental reports whether op evaluates a function (exp, tanh, a
// polynomial) rather than a copy or one arithmetic operation per element:
// such ops are compute-bound on a CPU.
func (op Unary) Transcendental() bool { return op.Valid() && unary[op].transcendental }

// Binary selects the function of an elementwise binary kernel.
type Binary uint8

// The binary ops. Add, Sub, Mul and Div are 0 to 3 in this order: the
// amd64 assembly of gpukit/kernels (binary_amd64.s) reads these codes.
const (
	Add     Binary = iota // a + b
	Sub                   // a - b
	Mul                   // a * b
	Div                   // a / b
	Max                   // max(a, b), NaN if either is NaN
	Min                   // min(a, b), NaN if either is NaN
	Pow                   // a ** b, computed in float64
	Greater               // 1 if a > b else 0
	Less                  // 1 if a < b else 0
	Equal                 // 1 if a == b else 0
	// ThresholdBackward is ReLU's backward from its output: a where
	// !(b <= 0), else 0 (a NaN in b passes a, as PyTorch's
	// threshold_backward).
	ThresholdBackward
	GreaterEqual // 1 if a >= b else 0
	LessEqual    // 1 if a <= b else 0
	// The activations' backward passes, a·f′(b) in one pass over memory:
	// a is the gradient, b what the derivative is taken of (the input for
	// the GELUs, the output for sigmoid and tanh). f′(b) is the Unary op
	// Derivative names, rounded to the dtype the op computes in, then
	// multiplied by a, as PyTorch's gelu_backward, sigmoid_backward and
	// tanh_backward are one kernel each (tools/autograd/derivatives.yaml).
	GeluBackward     // a·GeluDeriv(b)
	GeluTanhBackward // a·GeluTanhDeriv(b)
	SigmoidBackward  // a·SigmoidDeriv(b)
	TanhBackward     // a·TanhDeriv(b)
)

// binary is each binary op's name and kind.
var binary = [...]struct {
	name                   string
	arithmetic, comparison bool
}{
	Add:               {"Add", true, false},
	Sub:               {"Sub", true, false},
	Mul:               {"Mul", true, false},
	Div:               {"Div", true, false},
	Max:               {"Max", false, false},
	Min:               {"Min", false, false},
	Pow:               {"Pow", false, false},
	Greater:           {"Greater", false, true},
	Less:              {"Less", false, true},
	Equal:             {"Equal", false, true},
	ThresholdBackward: {"ThresholdBackward", false, false},
	GreaterEqual:      {"GreaterEqual", false, true},
	LessEqual:         {"LessEqual", false, true},
	GeluBackward:      {"GeluBackward", false, false},
	GeluTanhBackward:  {"GeluTanhBackward", false, false},
	SigmoidBackward:   {"SigmoidBackward", false, false},
	TanhBackward:      {"TanhBackward", false, false},
}

// Binaries lists the binary ops in order.
func Binaries() []Binary { return upTo[Binary](len(binary)) }

// Valid reports whether op is one of the binary ops above.
func (op Binary) Valid() bool { return int(op) < len(binary) }

func (op Binary) String() string {
	if op.Valid() {
		return binary[op].name
	}
	return fmt.Sprintf("BinaryOp(%d)", uint8(op))
}

// Arithmetic reports whether op is one of the four arithmetic operations
// (Add, Sub, Mul, Div), which the vector units run directly.
func (op Binary) Arithmetic() bool { return op.Valid() && binary[op].arithmetic }

// Comparison reports whether op is a comparison (1 or 0), which may write
// a Bool result from operands of another dtype.
func (op Binary) Comparison() bool { return op.Valid() && binary[op].comparison }

// derivatives are the backward ops' derivatives, indexed by op (Identity,
// the zero value, for the other ops): an array, not a map, since the
// kernels ask for every contiguous run of every binary op.
var derivatives = [len(binary)]Unary{
	GeluBackward:     GeluDeriv,
	GeluTanhBackward: GeluTanhDeriv,
	SigmoidBackward:  SigmoidDeriv,
	TanhBackward:     TanhDeriv,
}

// Derivative is the Unary op whose value a backward op multiplies the
// gradient by (GeluDeriv for GeluBackward), and false for the other ops.
func (op Binary) Derivative() (Unary, bool) {
	if !op.Valid() || derivatives[op] == Identity {
		return Identity, false
	}
	return derivatives[op], true
}

// Reduce selects the combining function of a reduction.
type Reduce uint8

const (
	ReduceSum  Reduce = iota // Σ, accumulated in float64
	ReduceMean               // Σ/n, accumulated in float64
	ReduceMax                // maximum; NaN if any element is NaN
	ReduceMin                // minimum; NaN if any element is NaN
)

var reduce = [...]string{ReduceSum: "Sum", ReduceMean: "Mean", ReduceMax: "Max", ReduceMin: "Min"}

// Reduces lists the reductions in order.
func Reduces() []Reduce { return upTo[Reduce](len(reduce)) }

// Valid reports whether op is one of the reductions above.
func (op Reduce) Valid() bool { return int(op) < len(reduce) }

func (op Reduce) String() string {
	if op.Valid() {
		return reduce[op]
	}
	return fmt.Sprintf("ReduceOp(%d)", uint8(op))
}

// AdamScalars are the hyperparameters of one Adam step for one parameter
// (torch.optim.Adam and AdamW). Step is the parameter's step count after
// this step (1 at the first), from which the bias corrections come.
type AdamScalars struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	Decoupled                          bool // AdamW: decay the parameter, not the gradient
	Step                               int
}

// upTo lists the n ops of a kind: 0 to n-1.
func upTo[T ~uint8](n int) []T {
	all := make([]T, n)
	for i := range all {
		all[i] = T(i)
	}
	return all
}
