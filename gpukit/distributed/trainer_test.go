package distributed_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/distributed"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// simCards is n fresh classroom cards, sim:1 .. sim:n.
func simCards(t *testing.T, n int) []*device.Device {
	t.Helper()
	devs := make([]*device.Device, n)
	for r := range devs {
		devs[r] = simtest.Card(t, simtest.Index(r+1))
	}
	return devs
}

// simGroup is a group of n fresh classroom cards, sim:1 .. sim:n.
func simGroup(t *testing.T, n int) *distributed.Group {
	t.Helper()
	g, err := distributed.NewGroup(simCards(t, n))
	require.NoError(t, err)
	return g
}

// mlp is a small model on the host, the same every call: 5 -> 7 -> 6 -> 3.
func mlp() *nn.Sequential {
	gen := tensor.NewGenerator(7)
	return nn.NewSequential(
		nn.NewLinear(5, 7, true, tensor.WithGenerator(gen)), nn.NewReLU(),
		nn.NewLinear(7, 6, true, tensor.WithGenerator(gen)), nn.NewReLU(),
		nn.NewLinear(6, 3, false, tensor.WithGenerator(gen)),
	)
}

// batch is the whole batch: 8 rows.
func batch() (x, y *tensor.Tensor) {
	gen := tensor.NewGenerator(11)
	return tensor.Randn([]int{8, 5}, tensor.WithGenerator(gen)), tensor.Randn([]int{8, 3}, tensor.WithGenerator(gen))
}

// reference trains mlp on one card on the whole batch with autograd and
// gpukit's optim.Adam (or SGD), in float32, and returns its parameters
// per layer, flat.
func reference(t *testing.T, steps int, opt distributed.Optimizer) [][]float64 {
	d := simtest.Card(t)
	model := mlp()
	var params []*tensor.Tensor
	for _, p := range nn.Parameters(model) {
		var q *tensor.Tensor
		tensor.NoGrad(func() { q = p.To(d, false) })
		q.SetRequiresGrad(true)
		params = append(params, q)
	}
	on := nn.NewSequential(
		&nn.Linear{In: 5, Out: 7, Weight: params[0], Bias: params[1]}, nn.NewReLU(),
		&nn.Linear{In: 7, Out: 6, Weight: params[2], Bias: params[3]}, nn.NewReLU(),
		&nn.Linear{In: 6, Out: 3, Weight: params[4]},
	)
	var o optim.Optimizer
	var err error
	if opt == distributed.SGD {
		o, err = optim.NewSGD(params, optim.SGDConfig{LR: 0.1, Momentum: 0.9})
	} else {
		o, err = optim.NewAdam(params, optim.DefaultAdam())
	}
	require.NoError(t, err)
	xh, yh := batch()
	x, y := xh.To(d, false), yh.To(d, false)
	for range steps {
		o.ZeroGrad(true)
		out := on.Forward(x)
		loss := tensor.MSELoss(out, y)
		loss.Backward()
		o.Step()
	}
	return [][]float64{
		append(params[0].Float64s(), params[1].Float64s()...),
		append(params[2].Float64s(), params[3].Float64s()...),
		params[4].Float64s(),
	}
}

// shares cuts the whole batch into n equal shares on the group's cards.
func shares(g *distributed.Group) (xs, ys []*tensor.Tensor) {
	xh, yh := batch()
	n := g.Size()
	k := 8 / n
	for r := range n {
		xr, yr := xh.Narrow(0, r*k, k), yh.Narrow(0, r*k, k)
		xs = append(xs, xr.Contiguous().To(g.Device(r), false))
		ys = append(ys, yr.Contiguous().To(g.Device(r), false))
	}
	return xs, ys
}

func maxDiff(a, b [][]float64) float64 {
	var m float64
	for l := range a {
		for i := range a[l] {
			m = max(m, abs(a[l][i]-b[l][i]))
		}
	}
	return m
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// Data parallelism at every stage, in float32, takes the step one card
// takes on the whole batch: after three steps the parameters agree with
// autograd and optim's Adam (or SGD with momentum) on one card within
// float32 rounding, on every rank.
func TestStepsEqualOneCard(t *testing.T) {
	const steps = 3
	for _, opt := range []distributed.Optimizer{distributed.Adam, distributed.SGD} {
		want := reference(t, steps, opt)
		for _, stage := range []distributed.Stage{distributed.DDP, distributed.ZeRO1, distributed.ZeRO2, distributed.ZeRO3} {
			for _, n := range []int{1, 2, 4} {
				t.Run(fmt.Sprintf("%s/%s/N=%d", opt, stage, n), func(t *testing.T) {
					g := simGroup(t, n)
					cfg := distributed.Config{Stage: stage, Optimizer: opt, SGD: optim.SGDConfig{LR: 0.1, Momentum: 0.9}}
					tr, err := distributed.NewTrainer(g, mlp(), cfg)
					require.NoError(t, err)
					xs, ys := shares(g)
					for range steps {
						_, err := tr.Step(xs, ys)
						require.NoError(t, err)
					}
					for r := range n {
						got, err := tr.Parameters(r)
						require.NoError(t, err)
						require.Less(t, maxDiff(got, want), 2e-6, "rank %d", r)
					}
				})
			}
		}
	}
}

// In mixed precision (float16 parameters and gradients, float32 master
// weights and Adam state) N cards take the step one card takes: the
// master weights differ only by the float16 rounding of gradients summed
// in another order, and stay near the float32 reference.
func TestMixedPrecisionStepsEqualOneCard(t *testing.T) {
	const steps = 3
	want := reference(t, steps, distributed.Adam)
	for _, stage := range []distributed.Stage{distributed.DDP, distributed.ZeRO1, distributed.ZeRO2, distributed.ZeRO3} {
		t.Run(stage.String(), func(t *testing.T) {
			masters := map[int][][]float64{}
			for _, n := range []int{1, 4} {
				g := simGroup(t, n)
				tr, err := distributed.NewTrainer(g, mlp(), distributed.Config{Stage: stage, Dtype: tensor.Float16})
				require.NoError(t, err)
				xs, ys := shares(g)
				for range steps {
					_, err := tr.Step(xs, ys)
					require.NoError(t, err)
				}
				masters[n], err = tr.MasterParameters()
				require.NoError(t, err)
				p, err := tr.Parameters(n - 1)
				require.NoError(t, err)
				require.Less(t, maxDiff(p, masters[n]), 1e-3, "the float16 parameters are the master weights rounded")
			}
			require.Less(t, maxDiff(masters[4], masters[1]), 2e-5)
			require.Less(t, maxDiff(masters[4], want), 5e-4)
		})
	}
}

func TestTrainerMisuse(t *testing.T) {
	g := simGroup(t, 2)
	lin := func(in, out int) *nn.Linear { return nn.NewLinear(in, out, true, tensor.OnHost(false)) }
	for _, tc := range []struct {
		model *nn.Sequential
		cfg   distributed.Config
		want  string
	}{
		{mlp(), distributed.Config{Stage: 4}, "stage 4; use DDP (0), ZeRO1, ZeRO2 or ZeRO3"},
		{mlp(), distributed.Config{Dtype: tensor.Int64}, "dtype int64; use Float32"},
		{mlp(), distributed.Config{BucketCapMB: -1}, "bucket_cap_mb -1 must be positive"},
		{mlp(), distributed.Config{Optimizer: distributed.SGD, SGD: optim.SGDConfig{LR: 0.1, Momentum: 0.9, Nesterov: true}}, "SGD with dampening or Nesterov momentum is not supported"},
		{mlp(), distributed.Config{Adam: optim.AdamConfig{LR: -1}}, "Invalid learning rate: -1"},
		{nn.NewSequential(), distributed.Config{}, "the model has no layers"},
		{nn.NewSequential(lin(2, 3), nn.NewGELU(), lin(3, 2)), distributed.Config{}, "layer 1 is *nn.GELU, not ReLU"},
		{nn.NewSequential(lin(2, 3), nn.NewReLU()), distributed.Config{}, "the model ends with a ReLU"},
		{nn.NewSequential(lin(2, 3), nn.NewReLU(), lin(4, 2)), distributed.Config{}, "layer 2 takes 4 features but the layer before gives 3"},
	} {
		_, err := distributed.NewTrainer(g, tc.model, tc.cfg)
		assert.ErrorContains(t, err, "distributed: NewTrainer: "+tc.want)
	}
	_, err := distributed.NewTrainer(nil, mlp(), distributed.Config{})
	assert.ErrorContains(t, err, "distributed: NewTrainer: nil group")

	tr, err := distributed.NewTrainer(g, mlp(), distributed.Config{Stage: distributed.ZeRO3})
	require.NoError(t, err)
	xs, ys := shares(g)
	wrong := tensor.Zeros([]int{4, 6}, tensor.On(g.Device(1)))
	short := tensor.Zeros([]int{3, 5}, tensor.On(g.Device(1)))
	for _, tc := range []struct {
		xs, ys []*tensor.Tensor
		want   string
	}{
		{xs[:1], ys, "1 inputs and 2 targets for 2 ranks"},
		{[]*tensor.Tensor{xs[0], nil}, ys, "rank 1's input or target is nil"},
		{[]*tensor.Tensor{xs[0], wrong}, ys, "rank 1's input has shape [4 6]; want [batch, 5]"},
		{xs, []*tensor.Tensor{ys[0], wrong}, "rank 1's target has shape [4 6]; want [4, 3]"},
		{[]*tensor.Tensor{xs[0], short}, ys, "rank 1's target has shape [4 3]; want [3, 3]"},
	} {
		_, err := tr.Step(tc.xs, tc.ys)
		assert.ErrorContains(t, err, "distributed: Step: "+tc.want)
	}
	_, err = tr.Step(xs, ys)
	require.NoError(t, err)
	_, err = tr.Parameters(2)
	assert.ErrorContains(t, err, "distributed: Parameters: rank 2 of a group of 2")
}

// A model built on the host trains on meta cards too (the values are
// dropped), in bfloat16, at every stage; meta cards have no parameters to
// read back.
func TestHostModelOnMetaCards(t *testing.T) {
	for s := range 4 {
		g := metaGroup(t, 3, "h100-80gb")
		tr, err := distributed.NewTrainer(g, mlp(), distributed.Config{Stage: distributed.Stage(s), Dtype: tensor.BFloat16})
		require.NoError(t, err)
		var xs, ys []*tensor.Tensor
		for r := range 3 {
			xs = append(xs, tensor.Zeros([]int{2, 5}, tensor.On(g.Device(r))))
			ys = append(ys, tensor.Zeros([]int{2, 3}, tensor.On(g.Device(r))))
		}
		loss, err := tr.Step(xs, ys)
		require.NoError(t, err)
		assert.Zero(t, loss, "no values on meta cards")
		_, err = tr.Parameters(0)
		assert.ErrorContains(t, err, "distributed: Parameters: meta:0 is a meta card and holds no values")
	}
}
