package distributed_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/distributed"
	"github.com/gpumem/course/gpukit/tensor"
)

// DeepSpeed's defaults for stages 1 and 2 (deepspeed/runtime/zero/
// stage_1_and_2.py): in its step a rank flattens its partition of the
// 16-bit gradients (a copy, 2Ψ/N) and casts it to float32 (4Ψ/N) while
// the gradients are still held, so the step's peak is 2Ψ + (2 + 2 + 4 +
// K)·Ψ/N; the gradients are freed after the cast, so after the step a
// rank holds 2Ψ + K·Ψ/N. Backward adds a reduce bucket of 5e8 16-bit
// elements (1 GB).
func TestDeepSpeedDefaults(t *testing.T) {
	const psi, n = 4e9, 2
	for _, stage := range []distributed.Stage{distributed.ZeRO1, distributed.ZeRO2} {
		t.Run(stage.String(), func(t *testing.T) {
			plain, err := distributed.MeasureMemory(distributed.Experiment{Params: psi, Devices: n, Stage: stage, LayerSize: psi / 8})
			require.NoError(t, err)
			ds, err := distributed.MeasureMemory(distributed.Experiment{Params: psi, Devices: n, Stage: stage, LayerSize: psi / 8, DeepSpeed: true})
			require.NoError(t, err)
			assert.InEpsilon(t, 2*psi+12*psi/n, float64(ds.ModelStateBytes), 0.01, "the gradients are freed after the step")
			assert.InEpsilon(t, distributed.FormulaBytes(psi, n, stage, 12), float64(plain.ModelStateBytes), 0.01)
			step := 2*psi + (2+2+4+12)*psi/n
			assert.GreaterOrEqual(t, float64(ds.PeakBytes), step*0.999)
			assert.Less(t, float64(ds.PeakBytes), step+0.5e9, "the step's peak, not backward's (activations and the bucket are less)")
			assert.Greater(t, ds.PeakBytes, plain.PeakBytes)
			assert.Equal(t, plain.CommBytes, ds.CommBytes)
		})
	}
}

// The reduce bucket is allocated for backward and freed after it: a
// model whose states are small shows it in the peak.
func TestDeepSpeedReduceBucket(t *testing.T) {
	plain, err := distributed.MeasureMemory(distributed.Experiment{Params: 1e6, Devices: 2, Stage: distributed.ZeRO2, LayerSize: 1e6 / 4})
	require.NoError(t, err)
	ds, err := distributed.MeasureMemory(distributed.Experiment{Params: 1e6, Devices: 2, Stage: distributed.ZeRO2, LayerSize: 1e6 / 4, DeepSpeed: true})
	require.NoError(t, err)
	assert.InDelta(t, 1e9, float64(ds.PeakBytes-plain.PeakBytes), 0.02e9)
}

func TestDeepSpeedOnlyForStagesOneAndTwo(t *testing.T) {
	for _, s := range []distributed.Stage{distributed.DDP, distributed.ZeRO3} {
		_, err := distributed.MeasureMemory(distributed.Experiment{Params: 1e6, Devices: 2, Stage: s, DeepSpeed: true})
		assert.EqualError(t, err, "distributed: NewTrainer: DeepSpeed's defaults are modelled for stages 1 and 2 (stage_1_and_2.py), not "+s.String())
	}
}

// DeepSpeed's step changes where the memory goes, not the values: the
// same parameters as the paper's stage after three steps on four sim
// cards, in mixed and in full precision.
func TestDeepSpeedSameValues(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float16, tensor.Float32} {
		for _, stage := range []distributed.Stage{distributed.ZeRO1, distributed.ZeRO2} {
			t.Run(fmt.Sprintf("%s/%s", stage, dt), func(t *testing.T) {
				params := map[bool][][]float64{}
				for _, ds := range []bool{false, true} {
					g := simGroup(t, 4)
					cfg := distributed.Config{Stage: stage, Dtype: dt, DeepSpeed: ds}
					if ds {
						cfg.ReduceBucketSize = 1000
					}
					tr, err := distributed.NewTrainer(g, mlp(), cfg)
					require.NoError(t, err)
					xs, ys := shares(g)
					for range 3 {
						_, err := tr.Step(xs, ys)
						require.NoError(t, err)
					}
					params[ds], err = tr.Parameters(3)
					require.NoError(t, err)
				}
				assert.Equal(t, params[false], params[true])
			})
		}
	}
}

func TestReduceBucketSizeMisuse(t *testing.T) {
	g := simGroup(t, 2)
	for _, cfg := range []distributed.Config{
		{Stage: distributed.ZeRO1, DeepSpeed: true, ReduceBucketSize: -1},
		{Stage: distributed.ZeRO1, ReduceBucketSize: 10},
	} {
		_, err := distributed.NewTrainer(g, mlp(), cfg)
		assert.ErrorContains(t, err, fmt.Sprintf("distributed: NewTrainer: reduce bucket size %d: use 0, or a positive size with DeepSpeed", cfg.ReduceBucketSize))
	}
}
