package distributed_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/distributed"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/tensor"
)

// perRank returns one tensor per rank, rank r's holding values
// r·100 + i (i = 0 .. n-1), in dtype.
func perRank(g *distributed.Group, n int, dt tensor.Dtype) []*tensor.Tensor {
	ts := make([]*tensor.Tensor, g.Size())
	for r := range ts {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r*100 + i)
		}
		ts[r] = tensor.FromSlice(v, []int{n}, dt, tensor.On(g.Device(r)))
	}
	return ts
}

// onRanks returns one tensor per rank of g, made by newT (tensor.Empty,
// tensor.Zeros) with shape and opts on the rank's device.
func onRanks(g *distributed.Group, newT func([]int, ...tensor.Option) *tensor.Tensor, shape []int, opts ...tensor.Option) []*tensor.Tensor {
	ts := make([]*tensor.Tensor, g.Size())
	for r := range ts {
		ts[r] = newT(shape, append([]tensor.Option{tensor.On(g.Device(r))}, opts...)...)
	}
	return ts
}

// The collectives' values equal a single-device reference: the sums of
// the ranks' tensors (exact here: small integers), chunk r of it on rank
// r after a reduce-scatter, every rank's input in rank order after an
// all-gather, the root's tensor everywhere after a broadcast.
func TestCollectiveValues(t *testing.T) {
	for _, n := range []int{1, 3, 4} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float16, tensor.Float64} {
			t.Run(fmt.Sprintf("N=%d/%s", n, dt), func(t *testing.T) {
				g := simGroup(t, n)
				const k = 5
				sum := make([]float64, n*k)
				for i := range sum {
					for r := range n {
						sum[i] += float64(r*100 + i)
					}
				}

				ar := perRank(g, n*k+1, dt) // not a multiple of N: uneven chunks
				_, err := g.AllReduce(ar)
				require.NoError(t, err)
				for r := range n {
					got := ar[r].Float64s()
					for i := range n * k {
						require.Equal(t, sum[i], got[i], "all-reduce rank %d element %d", r, i)
					}
				}

				in := perRank(g, n*k, dt)
				out := onRanks(g, tensor.Zeros, []int{k}, dt)
				_, err = g.ReduceScatter(out, in)
				require.NoError(t, err)
				for r := range n {
					assert.Equal(t, sum[r*k:(r+1)*k], out[r].Float64s(), "reduce-scatter rank %d", r)
				}

				small := perRank(g, k, dt)
				full := onRanks(g, tensor.Zeros, []int{n * k}, dt)
				_, err = g.AllGather(full, small)
				require.NoError(t, err)
				for r := range n {
					got := full[r].Float64s()
					for c := range n {
						assert.Equal(t, small[c].Float64s(), got[c*k:(c+1)*k], "all-gather rank %d chunk %d", r, c)
					}
				}

				b := perRank(g, k, dt)
				want := b[n-1].Float64s()
				_, err = g.Broadcast(b, n-1)
				require.NoError(t, err)
				for r := range n {
					assert.Equal(t, want, b[r].Float64s(), "broadcast rank %d", r)
				}
			})
		}
	}
}

// A float16 all-reduce rounds after each addition of the ring, as NCCL
// does. Rank 0's chunk is summed in the ring's order x1 + x2 + x0:
// 2048 + 1 rounds to 2048 in float16 (the spacing there is 2, ties to
// even), and so does 2048 + 1 again, while the exact sum is 2050.
func TestRingRoundsEachStep(t *testing.T) {
	g := simGroup(t, 3)
	ts := make([]*tensor.Tensor, 3)
	for r, v := range []float32{1, 2048, 1} {
		ts[r] = tensor.FromSlice([]float32{v}, []int{1}, tensor.Float16, tensor.On(g.Device(r)))
	}
	_, err := g.AllReduce(ts)
	require.NoError(t, err)
	for r := range 3 {
		assert.Equal(t, 2048.0, ts[r].Item(), "rank %d", r)
	}
}

// metaGroup is n fresh meta cards of a profile, grouped with opts.
func metaGroup(t *testing.T, n int, profile string, opts ...distributed.GroupOption) *distributed.Group {
	t.Helper()
	devs := simtest.Cards(t, n, simtest.Profile(profile), simtest.Meta(), simtest.Capacity(64*device.GiB))
	g, err := distributed.NewGroup(devs, opts...)
	require.NoError(t, err)
	return g
}

// The ring's cost on each card's clock: all-reduce 2(N-1) steps of a
// chunk of n/N bytes, reduce-scatter and all-gather N-1, each step the
// launch overhead plus the chunk at the link's rate: NVLink between
// H100s (450 GB/s), PCIe between T4s (12.6 GB/s).
func TestRingCost(t *testing.T) {
	const n = 8
	const elems = 1 << 27 // 256 MiB of float16
	for _, tc := range []struct {
		profile, link string
		bw            float64
	}{
		{"h100-80gb", "NVLink", 450e9},
		{"t4", "PCIe", 12.6e9},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			g := metaGroup(t, n, tc.profile)
			link, bw := g.Link()
			assert.Equal(t, tc.link, link)
			assert.InEpsilon(t, tc.bw, bw, 1e-9)
			step := 5*time.Microsecond + time.Duration(float64(2*elems/n)/tc.bw*1e9+0.5)

			ts := onRanks(g, tensor.Empty, []int{elems}, tensor.Float16)
			start := g.Device(0).StreamClock(g.CommStream(0))
			w, err := g.AllReduce(ts)
			require.NoError(t, err)
			for r := range n {
				assert.Equal(t, 2*(n-1)*step, g.Stats(r).Time)
				assert.Equal(t, int64(2*(n-1)*2*elems/n), g.Stats(r).Bytes, "2(N-1)/N of the bytes")
			}
			assert.InDelta(t, float64(2*(n-1)*step), float64(g.Device(0).StreamClock(g.CommStream(0))-start), float64(time.Millisecond))
			w.Wait()
			assert.GreaterOrEqual(t, g.Device(0).StreamClock(0), g.Device(0).StreamClock(g.CommStream(0)), "Wait: the default stream goes on after the collective")

			g.ResetStats()
			out := onRanks(g, tensor.Empty, []int{elems / n}, tensor.Float16)
			_, err = g.ReduceScatter(out, ts)
			require.NoError(t, err)
			assert.Equal(t, (n-1)*step, g.Stats(0).Time)
			_, err = g.AllGather(ts, out)
			require.NoError(t, err)
			assert.Equal(t, 2*(n-1)*step, g.Stats(0).Time, "reduce-scatter + all-gather = all-reduce")
		})
	}
}

// A collective starts when the slowest rank is ready: a rank whose
// default stream is busy holds the others back.
func TestCollectiveWaitsForTheSlowestRank(t *testing.T) {
	g := metaGroup(t, 4, "h100-80gb")
	g.Device(2).Launch(0, device.Kernel{Flops: 67e12}) // one second of FP32 work on rank 2
	ts := onRanks(g, tensor.Empty, []int{1024})
	_, err := g.AllReduce(ts)
	require.NoError(t, err)
	for r := range 4 {
		assert.Greater(t, g.Device(r).StreamClock(g.CommStream(r)), time.Second, "rank %d", r)
	}
}

// The receive buffer of a ring step is allocated through the caching
// allocator: the peak shows one chunk more than the tensor.
func TestReceiveBufferShowsInThePeak(t *testing.T) {
	g := metaGroup(t, 4, "h100-80gb")
	d := g.Device(0)
	ts := onRanks(g, tensor.Empty, []int{1 << 24}) // 64 MiB
	d.ResetPeakStats()
	before := d.MemoryAllocated()
	_, err := g.AllReduce(ts)
	require.NoError(t, err)
	assert.Equal(t, before+16<<20, d.MaxMemoryAllocated(), "a chunk of 16 MiB")
	assert.Equal(t, before, d.MemoryAllocated(), "freed after")
}

func TestGroupMisuse(t *testing.T) {
	a, b := simtest.Card(t, simtest.Index(1)), simtest.Card(t, simtest.Index(2))
	_, err := distributed.NewGroup(nil)
	assert.ErrorContains(t, err, "distributed: NewGroup: a process group needs at least one device")
	_, err = distributed.NewGroup([]*device.Device{a, a})
	assert.ErrorContains(t, err, "each rank needs a card of its own")
	_, err = distributed.NewGroup([]*device.Device{a, nil})
	assert.ErrorContains(t, err, "device of rank 1 is nil")
	m := simtest.Card(t, simtest.Meta())
	_, err = distributed.NewGroup([]*device.Device{a, m})
	assert.ErrorContains(t, err, "use all sim or all meta cards")

	g, err := distributed.NewGroup([]*device.Device{a, b})
	require.NoError(t, err)
	x := tensor.Zeros([]int{4}, tensor.On(a))
	y := tensor.Zeros([]int{4}, tensor.On(b))
	z := tensor.Zeros([]int{3}, tensor.On(b))
	h := tensor.Zeros([]int{4}, tensor.Float16, tensor.On(b))
	i := tensor.Zeros([]int{4}, tensor.Int64, tensor.On(b))
	i0 := tensor.Zeros([]int{4}, tensor.Int64, tensor.On(a))
	m2 := tensor.Zeros([]int{2, 2}, tensor.On(b)).T()
	rel := tensor.Zeros([]int{4}, tensor.On(b))
	rel.Release()
	for _, tc := range []struct {
		ts   []*tensor.Tensor
		want string
	}{
		{[]*tensor.Tensor{x}, "1 input tensors for 2 ranks"},
		{[]*tensor.Tensor{x, nil}, "input tensor of rank 1 is nil"},
		{[]*tensor.Tensor{x, x}, "input tensor of rank 1 lives on sim:1, not on the rank's card sim:2"},
		{[]*tensor.Tensor{x, z}, "input tensor of rank 1 has 3 elements, rank 0's has 4"},
		{[]*tensor.Tensor{x, h}, "input tensor of rank 1 is float16, rank 0's is float32"},
		{[]*tensor.Tensor{i0, i}, "input tensors are int64; collectives here reduce floating-point tensors"},
		{[]*tensor.Tensor{x, m2}, "input tensor of rank 1 is not contiguous"},
		{[]*tensor.Tensor{x, rel}, "input tensor of rank 1 was released"},
	} {
		_, err := g.AllReduce(tc.ts)
		assert.ErrorContains(t, err, "distributed: AllReduce: "+tc.want)
	}
	_, err = g.Broadcast([]*tensor.Tensor{x, y}, 2)
	assert.ErrorContains(t, err, "distributed: Broadcast: root 2 is not a rank of a group of 2")
	_, err = g.ReduceScatter([]*tensor.Tensor{x, y}, []*tensor.Tensor{x, y})
	assert.ErrorContains(t, err, "distributed: ReduceScatter: input tensor of rank 0 has 4 elements, expected 8")
	_, err = g.AllGather([]*tensor.Tensor{x, y}, []*tensor.Tensor{x, y})
	assert.ErrorContains(t, err, "distributed: AllGather: output tensor of rank 0 has 4 elements, expected 8")
}

// DDP's buckets follow PyTorch's assignment: layers in backward order, a
// first bucket closed at 1 MiB, later ones at bucket_cap_mb; their
// buffers are allocated when the trainer is built and stay, a second
// copy of the gradients unless the gradients are views into them.
func TestDDPBuckets(t *testing.T) {
	g := metaGroup(t, 2, "h100-80gb")
	var ls []nn.Module
	for i := range 6 {
		if i > 0 {
			ls = append(ls, nn.NewReLU())
		}
		ls = append(ls, nn.NewLinear(512, 512, false, tensor.On(g.Device(0)))) // 1 MiB of float32, 512 KiB of float16
	}
	model := nn.NewSequential(ls...)
	for _, view := range []bool{false, true} {
		d := g.Device(1)
		before := d.MemoryAllocated()
		tr, err := distributed.NewTrainer(g, model, distributed.Config{Dtype: tensor.Float16, BucketCapMB: 1.5, GradientAsBucketView: view})
		require.NoError(t, err)
		assert.Equal(t, [][]int{{5, 4}, {3, 2, 1}, {0}}, tr.Buckets(), "1 MiB, then 1.5 MiB")
		const layer = 512 * 512 * 2
		params, master := 6*layer, 6*2*layer
		buckets := 6 * layer
		assert.Equal(t, int64(params+master+buckets), d.MemoryAllocated()-before, "the buckets are allocated with the trainer")
		x := tensor.Zeros([]int{8, 512}, tensor.Float16, tensor.On(g.Device(0)))
		y := tensor.Zeros([]int{8, 512}, tensor.Float16, tensor.On(d))
		_, err = tr.Step([]*tensor.Tensor{x, x}, []*tensor.Tensor{x, x})
		assert.ErrorContains(t, err, "distributed: Step: rank 1's input is on meta:0 and target on meta:0; both must be on the rank's card meta:1")
		_, err = tr.Step([]*tensor.Tensor{x, y}, []*tensor.Tensor{x, y})
		require.NoError(t, err, "a refused call leaves the trainer usable")
		st := tr.Last()[1]
		grads, adam := 6*layer, 6*2*2*layer
		want := int64(params + master + grads + adam + 8*512*2) // y is rank 1's input and target
		if !view {
			want += int64(buckets)
			assert.Equal(t, int64(buckets), st.Buckets)
		} else {
			assert.Zero(t, st.Buckets)
		}
		// The allocator may hand out a whole remainder of a segment it
		// does not split (a large-pool remainder of at most 1 MiB).
		assert.GreaterOrEqual(t, st.Allocated-before, want, "gradient_as_bucket_view=%v", view)
		assert.Less(t, st.Allocated-before, want+1<<20, "gradient_as_bucket_view=%v", view)
		tr.Release()
		x.Release()
		y.Release()
		assert.Equal(t, before, d.MemoryAllocated(), "Release frees everything")
	}
}

// Two sim cards all-reduce their tensors: both hold the sum, and the
// card's clock says how long the ring took over PCIe (classroom cards have
// no NVLink).
func ExampleGroup_AllReduce() {
	a, _ := simtest.New(simtest.Index(1))
	b, _ := simtest.New(simtest.Index(2))
	g, _ := distributed.NewGroup([]*device.Device{a, b})
	x := tensor.FromSlice([]float32{1, 2, 3, 4}, []int{4}, tensor.On(a))
	y := tensor.FromSlice([]float32{10, 20, 30, 40}, []int{4}, tensor.On(b))
	w, err := g.AllReduce([]*tensor.Tensor{x, y})
	if err != nil {
		panic(err)
	}
	w.Wait()
	link, _ := g.Link()
	fmt.Println(x.Float64s(), y.Float64s(), link, g.Stats(0).Bytes, "bytes sent by rank 0")
	// Output: [11 22 33 44] [11 22 33 44] PCIe 16 bytes sent by rank 0
}

// nodeGroup is n fresh meta H100s placed on nodes like node.
func nodeGroup(t *testing.T, n int, node string) *distributed.Group {
	t.Helper()
	nd, err := device.LookupNode(node)
	require.NoError(t, err)
	return metaGroup(t, n, "h100-80gb", distributed.OnNodes(nd))
}

// A ring that spans nodes is as fast as its slowest link: NVLink inside
// a DGX H100 (450 GB/s), its eight NICs together between two (400 GB/s,
// NCCL running one ring per NIC), one 100 Gb/s NIC out of a PCIe node.
// Inside one node nothing changes. Each ring step costs the launch
// overhead, and each of the steps NCCL's model counts as crossing nodes
// (2·nodes of an all-reduce, nodes-1 of a reduce-scatter or all-gather)
// the network's latency instead.
func TestRingAcrossNodes(t *testing.T) {
	const elems = 1 << 28 // 512 MiB of float16: the ring, not the tree
	const alpha, net = 5 * time.Microsecond, 14 * time.Microsecond
	for _, tc := range []struct {
		node         string
		cards, nodes int
		link         string
		bw           float64
	}{
		{"dgx-h100", 8, 1, "NVLink", 450e9},
		{"dgx-h100", 64, 8, "network", 400e9},
		{"dgx-h100", 16, 2, "network", 400e9},
		{"pcie-node", 8, 1, "PCIe", 50.4e9},
		{"pcie-node", 64, 8, "network", 12.5e9},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.node, tc.cards), func(t *testing.T) {
			g := nodeGroup(t, tc.cards, tc.node)
			assert.Equal(t, tc.nodes, g.Nodes())
			link, bw := g.Link()
			assert.Equal(t, tc.link, link)
			assert.InEpsilon(t, tc.bw, bw, 1e-9)

			n := tc.cards
			chunk := time.Duration(float64(2*elems/n)/tc.bw*1e9 + 0.5)
			inter := 0
			if tc.nodes > 1 {
				inter = 2 * tc.nodes
			}
			want := time.Duration(2*(n-1)-inter)*alpha + time.Duration(inter)*net + time.Duration(2*(n-1))*chunk
			ts := onRanks(g, tensor.Empty, []int{elems}, tensor.Float16)
			_, err := g.AllReduce(ts)
			require.NoError(t, err)
			assert.InDelta(t, float64(want), float64(g.Stats(0).Time), 2, "all-reduce")
			assert.Equal(t, int64(2*(n-1)*2*elems/n), g.Stats(0).Bytes)
			assert.Zero(t, g.Stats(0).TreeCalls, "a large all-reduce takes the ring")

			g.ResetStats()
			out := onRanks(g, tensor.Empty, []int{elems / n}, tensor.Float16)
			_, err = g.ReduceScatter(out, ts)
			require.NoError(t, err)
			inter = tc.nodes - 1
			want = time.Duration(n-1-inter)*alpha + time.Duration(inter)*net + time.Duration(n-1)*chunk
			assert.InDelta(t, float64(want), float64(g.Stats(0).Time), 2, "reduce-scatter")
		})
	}
}

// A group without nodes is one node of every card, as before: the same
// link and the same clock as a DGX's single node.
func TestOneNodeIsTheOldRing(t *testing.T) {
	plain := metaGroup(t, 8, "h100-80gb")
	dgx := nodeGroup(t, 8, "dgx-h100")
	assert.Equal(t, 1, plain.Nodes())
	l1, b1 := plain.Link()
	l2, b2 := dgx.Link()
	assert.Equal(t, l1, l2)
	assert.Equal(t, b1, b2)
	for _, g := range []*distributed.Group{plain, dgx} {
		ts := onRanks(g, tensor.Empty, []int{1 << 20}, tensor.Float16)
		_, err := g.AllReduce(ts)
		require.NoError(t, err)
	}
	assert.Equal(t, plain.Stats(0), dgx.Stats(0))
}

// Between nodes NCCL may run an all-reduce as a tree (a chain inside
// each node, a binary tree between nodes) when its model predicts it is
// faster: a small tensor pays 2·(cards per node - 1 + log₂ nodes) hops of
// 28 µs instead of the ring's 2(N-1) steps; a large one the tree's lower
// bandwidth. Reduce-scatter and all-gather always take the ring.
func TestTreeForSmallAllReduceAcrossNodes(t *testing.T) {
	g := nodeGroup(t, 64, "dgx-h100")
	const elems = 1 << 10 // 2 KiB of float16
	ts := onRanks(g, tensor.Empty, []int{elems}, tensor.Float16)
	_, err := g.AllReduce(ts)
	require.NoError(t, err)
	st := g.Stats(0)
	assert.Equal(t, 1, st.TreeCalls)
	hops := 2 * (7 + 3)
	bw := 0.5 * 0.92 * 400e9
	want := time.Duration(hops)*28*time.Microsecond + time.Duration(float64(2*elems)/bw*1e9+0.5)
	assert.InDelta(t, float64(want), float64(st.Time), 2)
	assert.Equal(t, int64(2*2*elems), st.Bytes, "the tree: up once and down once")

	one := nodeGroup(t, 8, "dgx-h100") // inside one node: always the ring
	for r := range 8 {
		ts[r] = tensor.Empty([]int{elems}, tensor.Float16, tensor.On(one.Device(r)))
	}
	_, err = one.AllReduce(ts[:8])
	require.NoError(t, err)
	assert.Zero(t, one.Stats(0).TreeCalls)
}

func TestNodesMisuse(t *testing.T) {
	devs := simtest.Cards(t, 12, simtest.Profile("h100-80gb"), simtest.Meta())
	dgx, err := device.LookupNode("dgx-h100")
	require.NoError(t, err)
	_, err = distributed.NewGroup(devs, distributed.OnNodes(dgx))
	assert.EqualError(t, err, "distributed: NewGroup: 12 cards do not fill nodes of 8 cards; use at most 8 or a multiple of 8")
	bad := dgx
	bad.CardsPerNode = 0
	_, err = distributed.NewGroup(devs, distributed.OnNodes(bad))
	assert.EqualError(t, err, `distributed: NewGroup: node "dgx-h100": cards per node 0 must be at least 1`)
	_, err = distributed.NewGroup(devs[:4], distributed.OnNodes(dgx))
	require.NoError(t, err, "fewer cards than a node holds: one node")
	four := dgx
	four.CardsPerNode = 4
	g, err := distributed.NewGroup(devs, distributed.OnNodes(four))
	require.NoError(t, err)
	assert.Equal(t, 3, g.Nodes())
}

// Eight DGX H100s: a ring over 64 cards crosses the network between
// nodes, where the eight NICs of a node carry 400 GB/s together.
func ExampleOnNodes() {
	p, _ := device.LookupProfile("h100-80gb")
	dgx, _ := device.LookupNode("dgx-h100")
	devs := make([]*device.Device, 64)
	for r := range devs {
		devs[r], _ = device.New(sim.NewMeta(r, p))
	}
	g, err := distributed.NewGroup(devs, distributed.OnNodes(dgx))
	if err != nil {
		panic(err)
	}
	link, bw := g.Link()
	fmt.Printf("%d nodes; the ring's slowest link: %s, %.0f GB/s\n", g.Nodes(), link, bw/1e9)
	// Output: 8 nodes; the ring's slowest link: network, 400 GB/s
}

// The ZeRO paper's 7.5 B model on 64 H100s: in eight DGX H100 nodes its
// traffic crosses the nodes' NICs (400 GB/s together) rather than NVLink
// alone (450 GB/s), the same bytes at a lower rate.
func TestMeasureMemoryOnNodes(t *testing.T) {
	one, err := distributed.MeasureMemory(distributed.Experiment{Params: 7.5e9, Devices: 64, Stage: distributed.DDP, LayerSize: 7.5e9 / 8})
	require.NoError(t, err)
	dgx, err := distributed.MeasureMemory(distributed.Experiment{Params: 7.5e9, Devices: 64, Stage: distributed.DDP, LayerSize: 7.5e9 / 8, Node: "dgx-h100"})
	require.NoError(t, err)
	assert.Equal(t, 1, one.Nodes)
	assert.Equal(t, 8, dgx.Nodes)
	assert.Equal(t, 8, dgx.CardsPerNode)
	assert.Equal(t, one.CommBytes, dgx.CommBytes)
	assert.Equal(t, one.ModelStateBytes, dgx.ModelStateBytes)
	assert.InEpsilon(t, 450.0/400, dgx.CommSeconds/one.CommSeconds, 0.01)
	assert.Equal(t, "NVLink", one.Link)
	assert.InEpsilon(t, 450e9, one.LinkBandwidth, 1e-9)
	assert.Equal(t, "network", dgx.Link)
	assert.InEpsilon(t, 400e9, dgx.LinkBandwidth, 1e-9)

	four, err := distributed.MeasureMemory(distributed.Experiment{Params: 1e9, Devices: 16, Stage: distributed.ZeRO3, Node: "dgx-h100", CardsPerNode: 4})
	require.NoError(t, err)
	assert.Equal(t, 4, four.Nodes)
	assert.Equal(t, 4, four.CardsPerNode)
}

func TestMeasureMemoryNodeMisuse(t *testing.T) {
	for _, tc := range []struct {
		e    distributed.Experiment
		want string
	}{
		{distributed.Experiment{Params: 1e9, Devices: 8, Node: "dgx-b300"}, `distributed: MeasureMemory: unknown node "dgx-b300"; known nodes: "dgx-h100", "pcie-node"`},
		{distributed.Experiment{Params: 1e9, Devices: 12, Node: "dgx-h100"}, "distributed: MeasureMemory: 12 cards do not fill nodes of 8 cards; use at most 8 or a multiple of 8"},
		{distributed.Experiment{Params: 1e9, Devices: 8, Node: "dgx-h100", CardsPerNode: -1}, "distributed: MeasureMemory: cards per node -1 must be at least 1 (0: the node's own)"},
		{distributed.Experiment{Params: 1e9, Devices: 8, CardsPerNode: 4}, "distributed: MeasureMemory: cards per node 4 needs a node (Experiment.Node)"},
	} {
		_, err := distributed.MeasureMemory(tc.e)
		assert.EqualError(t, err, tc.want)
	}
}
