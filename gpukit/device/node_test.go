package device_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
)

// The built-in nodes: a DGX H100 joins its eight cards by NVLink and
// every card has a 400 Gb/s NIC of its own; the PCIe node's eight cards
// talk over PCIe and share one 100 Gb/s NIC.
func TestNodes(t *testing.T) {
	h100, err := device.LookupProfile("h100-80gb")
	require.NoError(t, err)
	for _, tc := range []struct {
		name      string
		cards     int
		intraLink string
		intraBW   float64
		network   float64 // bytes/s out of the node, all NICs together
	}{
		{"dgx-h100", 8, "NVLink", 450e9, 8 * 50e9},
		{"pcie-node", 8, "PCIe", 50.4e9, 12.5e9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := device.LookupNode(tc.name)
			require.NoError(t, err)
			require.NoError(t, n.Validate())
			assert.Equal(t, tc.cards, n.CardsPerNode)
			link, bw := n.IntraPath(h100, h100)
			assert.Equal(t, tc.intraLink, link)
			assert.InEpsilon(t, tc.intraBW, bw, 1e-9)
			assert.InEpsilon(t, tc.network, n.NetworkBandwidth(), 1e-9)
			assert.NotEmpty(t, n.Source)
			assert.Greater(t, n.NetLatency, time.Duration(0))
		})
	}
	names := []string{}
	for _, n := range device.Nodes() {
		names = append(names, n.Name)
	}
	assert.Equal(t, []string{"dgx-h100", "pcie-node"}, names)
}

// A node of classroom cards has no NVLink to wire: its cards take PCIe
// even in a node that wires NVLink.
func TestIntraPathNeedsNVLinkOnBothCards(t *testing.T) {
	n, err := device.LookupNode("dgx-h100")
	require.NoError(t, err)
	c, err := device.LookupProfile("classroom")
	require.NoError(t, err)
	link, bw := n.IntraPath(c, c)
	assert.Equal(t, "PCIe", link)
	assert.Equal(t, c.PeerBandwidth, bw)
}

func TestLookupNodeErrors(t *testing.T) {
	_, err := device.LookupNode("dgx-b300")
	require.Error(t, err)
	assert.Equal(t, `device: unknown node "dgx-b300"; known nodes: "dgx-h100", "pcie-node"`, err.Error())
	n, err := device.LookupNode(" DGX-H100 ")
	require.NoError(t, err)
	assert.Equal(t, "dgx-h100", n.Name)
}

// Validate refuses figures that cannot drive the model, naming the node.
func TestNodeValidate(t *testing.T) {
	good, err := device.LookupNode("dgx-h100")
	require.NoError(t, err)
	for _, tc := range []struct {
		change func(*device.Node)
		want   string
	}{
		{func(n *device.Node) { n.Name = "" }, "profile: node has no name"},
		{func(n *device.Node) { n.CardsPerNode = 0 }, `profile: node "dgx-h100": cards per node 0 must be at least 1`},
		{func(n *device.Node) { n.NICs = 0 }, `profile: node "dgx-h100": NICs 0 must be at least 1`},
		{func(n *device.Node) { n.NICBandwidth = math.NaN() }, `profile: node "dgx-h100": NIC bandwidth NaN must be positive`},
		{func(n *device.Node) { n.NICBandwidth = -1 }, `profile: node "dgx-h100": NIC bandwidth -1 must be positive`},
		{func(n *device.Node) { n.NetLatency = -time.Microsecond }, `profile: node "dgx-h100": network latency -1µs must not be negative`},
	} {
		n := good
		tc.change(&n)
		err := n.Validate()
		if assert.Error(t, err, tc.want) {
			assert.Equal(t, tc.want, err.Error())
		}
	}
}

// A DGX H100's eight NICs carry 400 GB/s out of the node, a little less
// than one card's NVLink: NCCL's rings cross nodes through all of them
// at once.
func ExampleNode() {
	n, _ := device.LookupNode("dgx-h100")
	h100, _ := device.LookupProfile("h100-80gb")
	link, bw := n.IntraPath(h100, h100)
	fmt.Printf("%s: %d cards, %s %.0f GB/s inside, %d NICs of %.0f GB/s = %.0f GB/s between nodes\n",
		n.Name, n.CardsPerNode, link, bw/1e9, n.NICs, n.NICBandwidth/1e9, n.NetworkBandwidth()/1e9)
	// Output: dgx-h100: 8 cards, NVLink 450 GB/s inside, 8 NICs of 50 GB/s = 400 GB/s between nodes
}
