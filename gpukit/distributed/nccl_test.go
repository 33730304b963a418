package distributed_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/distributed"
	"github.com/gpumem/course/gpukit/tensor"
)

// NCCL's defaults, from NVIDIA/nccl src/init.cc and src/include/device.h.
func TestNCCLDefaultSizes(t *testing.T) {
	assert.EqualValues(t, 4<<20, distributed.DefaultNCCLBuffSize, "DEFAULT_BUFFSIZE (1 << 22)")
	assert.EqualValues(t, 512<<10, distributed.DefaultNCCLLLBuffSize)
	assert.EqualValues(t, 4915200, distributed.DefaultNCCLLL128BuffSize)
	assert.EqualValues(t, 9633792, distributed.NCCLBuffers{Channels: 1}.PerConnection())
	assert.EqualValues(t, 1<<20+2, distributed.NCCLBuffers{Simple: 1 << 20, LL: 1, LL128: 1}.PerConnection())
}

// NCCL's buffers are device memory outside the caching allocator: the
// allocator's statistics do not move, the card's MemInfo (nvidia-smi)
// does, by channels · (Simple + LL + LL128) on every card of a group of
// two or more; Close gives them back.
func TestNCCLBuffersOutsideTheAllocator(t *testing.T) {
	per := int64(distributed.DefaultNCCLBuffSize + distributed.DefaultNCCLLLBuffSize + distributed.DefaultNCCLLL128BuffSize)
	for _, tc := range []struct {
		cards int
		b     distributed.NCCLBuffers
		want  int64
	}{
		{2, distributed.NCCLBuffers{Channels: 2}, 2 * per},
		{4, distributed.NCCLBuffers{Channels: 16}, 16 * per},
		{3, distributed.NCCLBuffers{Channels: 4, Simple: 1 << 20}, 4 * (per - 3<<20)},
		{1, distributed.NCCLBuffers{Channels: 8}, 0}, // no peer, no connection
	} {
		t.Run(fmt.Sprintf("%d cards, %d channels", tc.cards, tc.b.Channels), func(t *testing.T) {
			devs := simCards(t, tc.cards)
			var free0 []int64
			for _, d := range devs {
				f, _ := d.MemInfo()
				free0 = append(free0, f)
			}
			g, err := distributed.NewGroup(devs, distributed.WithNCCLBuffers(tc.b))
			require.NoError(t, err)
			assert.Equal(t, tc.want, g.NCCLBytes())
			for r, d := range devs {
				free, _ := d.MemInfo()
				assert.Equal(t, free0[r]-tc.want, free, "rank %d: nvidia-smi sees them", r)
				assert.Zero(t, d.MemoryReserved(), "rank %d: the allocator does not", r)
				assert.Zero(t, d.MemoryAllocated(), "rank %d", r)
			}
			g.Close()
			g.Close() // twice is harmless
			assert.Zero(t, g.NCCLBytes())
			for r, d := range devs {
				free, _ := d.MemInfo()
				assert.Equal(t, free0[r], free, "rank %d: freed", r)
			}
		})
	}
}

// With the buffers on, a collective's allocator statistics are those of
// a group without them: the receive buffers the ring allocates through
// the caching allocator are a separate thing from NCCL's own.
func TestNCCLBuffersLeaveAllocatorStatsAlone(t *testing.T) {
	run := func(opts ...distributed.GroupOption) (peak, reserved, used int64) {
		devs := simCards(t, 2)
		g, err := distributed.NewGroup(devs, opts...)
		require.NoError(t, err)
		defer g.Close()
		ts := perRank(g, 1<<20, tensor.Float32)
		_, err = g.AllReduce(ts)
		require.NoError(t, err)
		free, total := devs[0].MemInfo()
		return devs[0].MaxMemoryAllocated(), devs[0].MemoryReserved(), total - free
	}
	peak, reserved, used := run()
	peakN, reservedN, usedN := run(distributed.WithNCCLBuffers(distributed.NCCLBuffers{Channels: 2}))
	assert.Equal(t, peak, peakN, "max_memory_allocated() does not see NCCL's buffers")
	assert.Equal(t, reserved, reservedN, "nor does memory_reserved()")
	assert.Equal(t, used+2*distributed.NCCLBuffers{}.PerConnection(), usedN, "nvidia-smi does")
}

// MeasureMemory reports the memory outside the allocator beside its
// figures, which do not change; the card's usable memory shrinks by
// NCCL's buffers.
func TestMeasureMemoryNCCL(t *testing.T) {
	e := distributed.Experiment{Params: 4e6, Devices: 8, Stage: distributed.ZeRO3, LayerSize: 1e6, Tokens: 256, Card: "h100-80gb"}
	off, err := distributed.MeasureMemory(e)
	require.NoError(t, err)
	e.NCCLChannels = 16
	on, err := distributed.MeasureMemory(e)
	require.NoError(t, err)
	nccl := 16 * distributed.NCCLBuffers{}.PerConnection()
	assert.Zero(t, off.NCCLBytes)
	assert.Equal(t, nccl, on.NCCLBytes)
	assert.Equal(t, off.PeakBytes, on.PeakBytes)
	assert.Equal(t, off.PeakReservedBytes, on.PeakReservedBytes)
	assert.Equal(t, off.UsableBytes-nccl, on.UsableBytes)
	p, _ := device.LookupProfile("h100-80gb")
	assert.Equal(t, p.ContextSize, on.ContextBytes)
	assert.Equal(t, off.DeviceUsedBytes+nccl, on.DeviceUsedBytes)
	assert.GreaterOrEqual(t, off.DeviceUsedBytes, off.ContextBytes+off.PeakBytes)
}

func TestNCCLMisuse(t *testing.T) {
	a, _ := simtest.New(simtest.Index(1))
	b, _ := simtest.New(simtest.Index(2))
	for _, tc := range []struct {
		b    distributed.NCCLBuffers
		want string
	}{
		{distributed.NCCLBuffers{}, "distributed: NewGroup: NCCL channels 0 must be between 1 and 64"},
		{distributed.NCCLBuffers{Channels: 65}, "NCCL channels 65 must be between 1 and 64"},
		{distributed.NCCLBuffers{Channels: 1, LL: -1}, "NCCL buffer sizes 0, -1, 0 must be positive"},
		{distributed.NCCLBuffers{Channels: 2, Simple: 2 << 30}, "distributed: NewGroup: rank 0's NCCL buffers (2 channels of"},
	} {
		_, err := distributed.NewGroup([]*device.Device{a, b}, distributed.WithNCCLBuffers(tc.b))
		assert.ErrorContains(t, err, tc.want)
	}
	// A failed group gives back what it took: both cards are empty again.
	for _, d := range []*device.Device{a, b} {
		free, total := d.MemInfo()
		assert.Equal(t, total-d.Profile().ContextSize, free)
	}
	_, err := distributed.MeasureMemory(distributed.Experiment{Params: 1e6, Devices: 2, NCCLChannels: -1})
	assert.ErrorContains(t, err, "distributed: MeasureMemory: NCCL channels -1 must be between 0 (none modelled) and 64")
}

// Two classroom cards with NCCL's buffers for two channels: the
// allocator sees nothing of them, the card's MemInfo (what nvidia-smi
// reads) sees 18.4 MiB more in use.
func ExampleWithNCCLBuffers() {
	a, _ := simtest.New(simtest.Index(1))
	b, _ := simtest.New(simtest.Index(2))
	g, err := distributed.NewGroup([]*device.Device{a, b}, distributed.WithNCCLBuffers(distributed.NCCLBuffers{Channels: 2}))
	if err != nil {
		panic(err)
	}
	defer g.Close()
	free, total := a.MemInfo()
	fmt.Printf("NCCL's buffers: %d bytes per card\n", g.NCCLBytes())
	fmt.Printf("memory_reserved(): %d bytes\n", a.MemoryReserved())
	fmt.Printf("nvidia-smi: %.1f MiB = context %d MiB + NCCL %.1f MiB\n",
		float64(total-free)/(1<<20), a.Profile().ContextSize>>20, float64(g.NCCLBytes())/(1<<20))
	// Output:
	// NCCL's buffers: 19267584 bytes per card
	// memory_reserved(): 0 bytes
	// nvidia-smi: 146.4 MiB = context 128 MiB + NCCL 18.4 MiB
}
