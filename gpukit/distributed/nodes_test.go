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
	"github.com/gpumem/course/gpukit/tensor"
)

// nodeGroup is n fresh meta H100s placed on nodes like node.
func nodeGroup(t *testing.T, n int, node string, perNode int) *distributed.Group {
	t.Helper()
	nd, err := device.LookupNode(node)
	require.NoError(t, err)
	if perNode > 0 {
		nd.CardsPerNode = perNode
	}
	devs := simtest.Cards(t, n, simtest.Profile("h100-80gb"), simtest.Meta(), simtest.Capacity(64*device.GiB))
	g, err := distributed.NewGroup(devs, distributed.OnNodes(nd))
	require.NoError(t, err)
	return g
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
			g := nodeGroup(t, tc.cards, tc.node, 0)
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
			ts := make([]*tensor.Tensor, n)
			for r := range ts {
				ts[r] = tensor.Empty([]int{elems}, tensor.Float16, tensor.On(g.Device(r)))
			}
			_, err := g.AllReduce(ts)
			require.NoError(t, err)
			assert.InDelta(t, float64(want), float64(g.Stats(0).Time), 2, "all-reduce")
			assert.Equal(t, int64(2*(n-1)*2*elems/n), g.Stats(0).Bytes)
			assert.Zero(t, g.Stats(0).TreeCalls, "a large all-reduce takes the ring")

			g.ResetStats()
			out := make([]*tensor.Tensor, n)
			for r := range out {
				out[r] = tensor.Empty([]int{elems / n}, tensor.Float16, tensor.On(g.Device(r)))
			}
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
	dgx := nodeGroup(t, 8, "dgx-h100", 0)
	assert.Equal(t, 1, plain.Nodes())
	l1, b1 := plain.Link()
	l2, b2 := dgx.Link()
	assert.Equal(t, l1, l2)
	assert.Equal(t, b1, b2)
	for _, g := range []*distributed.Group{plain, dgx} {
		ts := make([]*tensor.Tensor, 8)
		for r := range ts {
			ts[r] = tensor.Empty([]int{1 << 20}, tensor.Float16, tensor.On(g.Device(r)))
		}
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
	g := nodeGroup(t, 64, "dgx-h100", 0)
	const elems = 1 << 10 // 2 KiB of float16
	ts := make([]*tensor.Tensor, 64)
	for r := range ts {
		ts[r] = tensor.Empty([]int{elems}, tensor.Float16, tensor.On(g.Device(r)))
	}
	_, err := g.AllReduce(ts)
	require.NoError(t, err)
	st := g.Stats(0)
	assert.Equal(t, 1, st.TreeCalls)
	hops := 2 * (7 + 3)
	bw := 0.5 * 0.92 * 400e9
	want := time.Duration(hops)*28*time.Microsecond + time.Duration(float64(2*elems)/bw*1e9+0.5)
	assert.InDelta(t, float64(want), float64(st.Time), 2)
	assert.Equal(t, int64(2*2*elems), st.Bytes, "the tree: up once and down once")

	one := nodeGroup(t, 8, "dgx-h100", 0) // inside one node: always the ring
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
