package distributed_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/distributed"
)

// Prefetching is bounded to one layer ahead: the card holds two gathered
// layers at most (the one computing, the one prefetched), where gathering
// on demand holds one; the values are the same either way, since only
// the order of the collectives on the clocks changes.
func TestPrefetchHoldsOneLayerAhead(t *testing.T) {
	var params [][][]float64
	for _, tc := range []struct {
		prefetch distributed.Prefetch
		gathered int
	}{
		{distributed.GatherOnDemand, 1},
		{distributed.PrefetchNext, 2},
	} {
		t.Run(tc.prefetch.String(), func(t *testing.T) {
			g := simGroup(t, 4)
			tr, err := distributed.NewTrainer(g, mlp(), distributed.Config{Stage: distributed.ZeRO3, Prefetch: tc.prefetch})
			require.NoError(t, err)
			xs, ys := shares(g)
			for range 3 {
				_, err := tr.Step(xs, ys)
				require.NoError(t, err)
			}
			for r, st := range tr.Last() {
				assert.Equal(t, tc.gathered, st.Gathered, "rank %d", r)
			}
			p, err := tr.Parameters(0)
			require.NoError(t, err)
			params = append(params, p)
		})
	}
	require.Len(t, params, 2)
	assert.Equal(t, params[0], params[1], "prefetching changes when, not what")
}

// On meta cards of equal layers, prefetching costs exactly one more
// gathered layer in the peak (float16: 2 bytes per parameter) and takes
// the gathers off the step's critical path; the model states and the
// traffic do not change.
func TestPrefetchMemoryAndTime(t *testing.T) {
	const psi, layers = 7.5e9, 8
	for _, tc := range []struct {
		name string
		e    distributed.Experiment
	}{
		{"one node", distributed.Experiment{Params: psi, Devices: 8, Stage: distributed.ZeRO3, LayerSize: psi / layers}},
		{"8 DGX H100s", distributed.Experiment{Params: psi, Devices: 64, Stage: distributed.ZeRO3, LayerSize: psi / layers, Node: "dgx-h100"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			demand, err := distributed.MeasureMemory(tc.e)
			require.NoError(t, err)
			tc.e.Prefetch = distributed.PrefetchNext
			ahead, err := distributed.MeasureMemory(tc.e)
			require.NoError(t, err)
			layer := int64(ahead.Hidden) * int64(ahead.Hidden) * 2
			assert.InDelta(t, demand.PeakBytes+layer, ahead.PeakBytes, 512, "one more gathered layer (rounded to the allocator's 512 bytes)")
			assert.Equal(t, demand.ModelStateBytes, ahead.ModelStateBytes)
			assert.Equal(t, demand.CommBytes, ahead.CommBytes)
			assert.Equal(t, demand.CommSeconds, ahead.CommSeconds)
			assert.Less(t, ahead.StepSeconds, demand.StepSeconds)
			assert.Equal(t, 1, demand.Gathered)
			assert.Equal(t, 2, ahead.Gathered)
		})
	}
}

// The figures measured before prefetching and NCCL's buffers existed
// (commit 684b976) stay exactly the same with both options off.
func TestDefaultsUnchanged(t *testing.T) {
	for _, want := range []struct {
		stage                        int
		node                         string
		states, peak, reserved, comm int64
		step, commTime               time.Duration
	}{
		{0, "", 67302912, 73446912, 100663296, 14000000, 366463, 171122},
		{0, "dgx-h100", 67302912, 73446912, 100663296, 15000000, 602725, 409530},
		{1, "", 22973440, 29117440, 50331648, 14000000, 462543, 311136},
		{1, "dgx-h100", 19973632, 26117632, 54525952, 15000000, 873068, 709560},
		{2, "", 15972352, 23045120, 52428800, 14000000, 477173, 311136},
		{2, "dgx-h100", 12472320, 19545088, 54525952, 15000000, 873068, 709560},
		{3, "", 8002048, 17075200, 33554432, 21000000, 698041, 466704},
		{3, "dgx-h100", 4001792, 13074944, 35651584, 22500000, 1292689, 1064340},
	} {
		t.Run(fmt.Sprintf("stage %d %q", want.stage, want.node), func(t *testing.T) {
			n := 8
			if want.node != "" {
				n = 16
			}
			m, err := distributed.MeasureMemory(distributed.Experiment{Params: 4e6, Devices: n, Stage: distributed.Stage(want.stage),
				LayerSize: 1e6, Tokens: 256, Node: want.node})
			require.NoError(t, err)
			assert.Equal(t, want.states, m.ModelStateBytes)
			assert.Equal(t, want.peak, m.PeakBytes)
			assert.Equal(t, want.reserved, m.PeakReservedBytes)
			assert.Equal(t, want.comm, m.CommBytes)
			assert.Equal(t, want.step, time.Duration(m.StepSeconds*1e9+0.5))
			assert.Equal(t, want.commTime, time.Duration(m.CommSeconds*1e9+0.5))
			assert.Zero(t, m.NCCLBytes)
		})
	}
}

func TestPrefetchMisuse(t *testing.T) {
	g := simGroup(t, 2)
	for _, tc := range []struct {
		cfg  distributed.Config
		want string
	}{
		{distributed.Config{Stage: distributed.ZeRO2, Prefetch: distributed.PrefetchNext}, "distributed: NewTrainer: prefetching gathers ZeRO-3's parameters ahead; ZeRO-2 gathers none per layer"},
		{distributed.Config{Stage: distributed.DDP, Prefetch: distributed.PrefetchNext}, "DDP gathers none per layer"},
		{distributed.Config{Stage: distributed.ZeRO3, Prefetch: 7}, "distributed: NewTrainer: unknown prefetch 7"},
	} {
		_, err := distributed.NewTrainer(g, mlp(), tc.cfg)
		assert.ErrorContains(t, err, tc.want)
	}
	_, err := distributed.MeasureMemory(distributed.Experiment{Params: 1e6, Devices: 2, Stage: distributed.ZeRO1, Prefetch: distributed.PrefetchNext})
	assert.ErrorContains(t, err, "distributed: MeasureMemory: prefetching gathers ZeRO-3's parameters ahead; stage 1")
	assert.Equal(t, "Prefetch(9)", distributed.Prefetch(9).String())
}

// Stage 3 of 7.5 B parameters in eight layers on eight H100s of one
// node, gathering each layer on demand and prefetching one layer ahead
// as FSDP does by default: one more gathered layer (1.875 GB of float16)
// in the peak, a shorter step, the same traffic.
func ExamplePrefetch() {
	for _, p := range []distributed.Prefetch{distributed.GatherOnDemand, distributed.PrefetchNext} {
		m, err := distributed.MeasureMemory(distributed.Experiment{Params: 7.5e9, Devices: 8, Stage: distributed.ZeRO3,
			LayerSize: 7.5e9 / 8, Prefetch: p})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-19s: %d gathered layer(s) held, peak %.2f GB, step %.1f ms, %.2f GB sent\n",
			p, m.Gathered, float64(m.PeakBytes)/1e9, m.StepSeconds*1e3, float64(m.CommBytes)/1e9)
	}
	// Output:
	// gather on demand   : 1 gathered layer(s) held, peak 21.25 GB, step 154.7 ms, 39.38 GB sent
	// prefetch next layer: 2 gathered layer(s) held, peak 23.13 GB, step 103.3 ms, 39.38 GB sent
}
