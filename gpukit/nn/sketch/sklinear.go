package sketch

import (
	"fmt"
	"math"

	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// SKLinear is a sketched linear layer (panther.nn.SKLinear). Inputs may
// have any number of leading dimensions.
type SKLinear struct {
	nn.Base
	In, Out, NumTerms, LowRank int
	S1s                        *tensor.Tensor // parameter [L, in, k]
	S2s                        *tensor.Tensor // parameter [L, k, out]
	U1s                        *tensor.Tensor // buffer [L, k, out], ±1/√k
	U2s                        *tensor.Tensor // buffer [L, in, k], ±1/√k
	Bias                       *tensor.Tensor // parameter [out], nil without bias
}

// Error is the error of a refused configuration; its message starts with
// "sketch: ".
type Error struct{ msg string }

func (e *Error) Error() string { return "sketch: " + e.msg }

func errorf(format string, args ...any) *Error { return &Error{fmt.Sprintf(format, args...)} }

// Numbers is how many numbers SKLinear(in, out, numTerms, lowRank) holds
// without bias, parameters and buffers together: 2·L·k·(in+out). ok is
// false if that overflows an int64.
func Numbers(in, out, numTerms, lowRank int) (n int64, ok bool) {
	n = 2
	for _, f := range []int{numTerms, lowRank} {
		if f <= 0 || n > math.MaxInt64/int64(f) {
			return 0, false
		}
		n *= int64(f)
	}
	sum := int64(in) + int64(out)
	if n > math.MaxInt64/sum {
		return 0, false
	}
	return n * sum, true
}

// New returns an SKLinear with Panther's initialisation, drawn from the
// generator in opts: the U buffers, then W from U(±1/√out), then the
// bias. It refuses non-positive sizes and a configuration holding more
// numbers than the dense in×out weight it replaces.
func New(in, out, numTerms, lowRank int, bias bool, opts ...tensor.Option) (*SKLinear, error) {
	if err := check(in, out, numTerms, lowRank); err != nil {
		return nil, err
	}
	s := newWithSketches(in, out, numTerms, lowRank, opts)
	bound := 1 / math.Sqrt(float64(out))
	w := uniform([]int{in, out}, bound, opts)
	defer w.Release()
	s.factor(w)
	if bias {
		s.Bias = uniform([]int{out}, bound, opts).SetRequiresGrad(true)
	}
	return s, nil
}

// FromLinear returns an SKLinear that approximates l: its factors are
// computed from l's weight (W = weightᵀ) and it copies l's bias. The U
// buffers are drawn from the generator in opts; the layer is placed on
// l's device in l's dtype unless opts say otherwise. l is not changed.
func FromLinear(l *nn.Linear, numTerms, lowRank int, opts ...tensor.Option) (*SKLinear, error) {
	if l == nil || l.Weight == nil {
		return nil, errorf("FromLinear: nil Linear (or one without a weight)")
	}
	if err := check(l.In, l.Out, numTerms, lowRank); err != nil {
		return nil, err
	}
	opts = append([]tensor.Option{placeLike(l.Weight), l.Weight.Dtype()}, opts...)
	s := newWithSketches(l.In, l.Out, numTerms, lowRank, opts)
	tensor.NoGrad(func() {
		w := l.Weight.T()
		defer w.Release()
		s.factor(w)
		if l.Bias != nil {
			s.Bias = l.Bias.Clone().SetRequiresGrad(true)
		}
	})
	return s, nil
}

func check(in, out, numTerms, lowRank int) error {
	if in <= 0 || out <= 0 || numTerms <= 0 || lowRank <= 0 {
		return errorf("SKLinear(in=%d, out=%d, numTerms=%d, lowRank=%d): sizes must be positive", in, out, numTerms, lowRank)
	}
	n, ok := Numbers(in, out, numTerms, lowRank)
	dense := int64(in) * int64(out)
	if !ok || n > dense {
		return errorf("SKLinear(in=%d, out=%d, numTerms=%d, lowRank=%d) holds 2·%d·%d·(%d+%d) = %s numbers (parameters and buffers), more than the %d of the dense weight it replaces: lower numTerms or lowRank",
			in, out, numTerms, lowRank, numTerms, lowRank, in, out, count(n, ok), dense)
	}
	return nil
}

func count(n int64, ok bool) string {
	if !ok {
		return "more than 2⁶³"
	}
	return fmt.Sprint(n)
}

func placeLike(t *tensor.Tensor) tensor.Option {
	if t.IsHost() {
		return tensor.OnHost(t.IsPinned())
	}
	return tensor.On(t.Device())
}

func uniform(shape []int, bound float64, opts []tensor.Option) *tensor.Tensor {
	u := tensor.Rand(shape, opts...)
	tensor.NoGrad(func() { u.MulInPlace(2 * bound).SubInPlace(bound) })
	return u
}

// signs returns a [rows, cols] matrix of ±1/√k, each sign a fair coin.
func signs(rows, cols, k int, opts []tensor.Option) *tensor.Tensor {
	u := tensor.Rand([]int{rows, cols}, opts...)
	defer u.Release()
	neg := u.Lt(0.5)
	defer neg.Release()
	s := neg.ToDtype(u.Dtype())
	tensor.NoGrad(func() { s.MulInPlace(-2 / math.Sqrt(float64(k))).AddInPlace(1 / math.Sqrt(float64(k))) })
	return s
}

func newWithSketches(in, out, numTerms, lowRank int, opts []tensor.Option) *SKLinear {
	s := &SKLinear{In: in, Out: out, NumTerms: numTerms, LowRank: lowRank}
	u1 := make([]*tensor.Tensor, numTerms)
	u2 := make([]*tensor.Tensor, numTerms)
	for i := range numTerms {
		u1[i] = signs(lowRank, out, lowRank, opts)
		g := signs(lowRank, in, lowRank, opts)
		gt := g.T()
		u2[i] = gt.Contiguous() // Panther's gen_U(k, in).T, stored contiguous
		release(g, gt)
	}
	s.U1s = stack(u1)
	s.U2s = stack(u2)
	return s
}

func stack(ts []*tensor.Tensor) *tensor.Tensor {
	st := tensor.Stack(ts, 0)
	for _, t := range ts {
		t.Release()
	}
	return st
}

// factor sets S1ᵢ = W·U1ᵢᵀ and S2ᵢ = U2ᵢᵀ·W for W [in, out].
func (s *SKLinear) factor(w *tensor.Tensor) {
	s1 := make([]*tensor.Tensor, s.NumTerms)
	s2 := make([]*tensor.Tensor, s.NumTerms)
	tensor.NoGrad(func() {
		for i := range s.NumTerms {
			u1, u2 := s.U1s.Select(0, i), s.U2s.Select(0, i)
			u1t, u2t := u1.T(), u2.T()
			s1[i], s2[i] = w.Matmul(u1t), u2t.Matmul(w)
			for _, t := range []*tensor.Tensor{u1, u2, u1t, u2t} {
				t.Release()
			}
		}
	})
	s.S1s = stack(s1).SetRequiresGrad(true)
	s.S2s = stack(s2).SetRequiresGrad(true)
}

// Members lists S1s, S2s and bias as parameters, U1s and U2s as buffers
// (Panther's names).
func (s *SKLinear) Members() nn.Members {
	ms := nn.Members{
		Params:  []nn.Named{{Name: "S1s", Tensor: s.S1s}, {Name: "S2s", Tensor: s.S2s}},
		Buffers: []nn.Named{{Name: "U1s", Tensor: s.U1s}, {Name: "U2s", Tensor: s.U2s}},
	}
	if s.Bias != nil {
		ms.Params = append(ms.Params, nn.Named{Name: "bias", Tensor: s.Bias})
	}
	return ms
}
