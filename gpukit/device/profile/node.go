package profile

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// LinkNetwork names the links between nodes (InfiniBand or RoCE NICs).
const LinkNetwork = "network"

// Node is a machine that holds several cards: how many, whether it
// wires their NVLink together, and the network cards (NICs) that join
// it to other nodes. A Profile describes a card; a Node describes where
// the cards sit, which decides the links a collective crosses.
type Node struct {
	Name        string // lookup name, e.g. "dgx-h100"
	Description string

	// CardsPerNode is how many cards one node holds.
	CardsPerNode int
	// NVLink says whether the node wires its cards' NVLink together (a
	// DGX's NVSwitches): two of its cards then talk at PeerPath's rate.
	// Without it they talk over PCIe, even cards whose profile has
	// NVLink.
	NVLink bool
	// NICs is the number of network cards the node's GPU traffic may use;
	// NICBandwidth is each one's rate per direction, bytes/s.
	NICs         int
	NICBandwidth float64
	// NetLatency is the latency of one ring step that crosses from one
	// node to the next.
	NetLatency time.Duration

	Source string // where the figures come from
}

// IntraPath is the link between two cards of profiles src and dst inside
// node n, and its bandwidth: PeerPath when the node wires NVLink, PCIe
// (the slower card's PeerBandwidth) when it does not.
func (n Node) IntraPath(src, dst Profile) (link string, bandwidth float64) {
	if n.NVLink {
		return PeerPath(src, dst)
	}
	return LinkPCIe, min(src.PeerBandwidth, dst.PeerBandwidth)
}

// NetworkBandwidth is what all of the node's NICs together carry out of
// it per direction, NICs·NICBandwidth: NCCL runs its rings (channels)
// through every NIC at once, so a ring that spans nodes shares them all.
func (n Node) NetworkBandwidth() float64 { return float64(n.NICs) * n.NICBandwidth }

// Validate reports a node whose figures cannot drive the model.
func (n Node) Validate() error {
	switch {
	case n.Name == "":
		return fmt.Errorf("profile: node has no name")
	case n.CardsPerNode < 1:
		return fmt.Errorf("profile: node %q: cards per node %d must be at least 1", n.Name, n.CardsPerNode)
	case n.NICs < 1:
		return fmt.Errorf("profile: node %q: NICs %d must be at least 1", n.Name, n.NICs)
	case !(n.NICBandwidth > 0) || math.IsInf(n.NICBandwidth, 0):
		return fmt.Errorf("profile: node %q: NIC bandwidth %v must be positive", n.Name, n.NICBandwidth)
	case n.NetLatency < 0:
		return fmt.Errorf("profile: node %q: network latency %v must not be negative", n.Name, n.NetLatency)
	}
	return nil
}

// Gbps is a network rate of 10⁹ bits per second, in bytes per second.
const Gbps = 1e9 / 8

// netLatency is the latency of a ring step between nodes: NCCL's own
// model of a network hop for the ring and its Simple protocol, the one
// large transfers use (hwLat[NCCL_HW_NET][NCCL_ALGO_RING][NCCL_PROTO_SIMPLE]
// = 14 µs in src/graph/tuning.cc of NVIDIA/nccl).
const netLatency = 14 * time.Microsecond

var nodes = []Node{
	{
		Name:         "dgx-h100",
		Description:  "NVIDIA DGX H100: 8 H100 SXM cards joined by NVLink through 4 NVSwitches, a 400 Gb/s NIC per card",
		CardsPerNode: 8,
		NVLink:       true,
		NICs:         8,
		NICBandwidth: 400 * Gbps,
		NetLatency:   netLatency,
		Source: "NVIDIA DGX H100 datasheet: 8 × H100 SXM, 4 × NVSwitch (900 GB/s GPU-to-GPU, both directions), " +
			"8 × single-port ConnectX-7 VPI, 400 Gb/s InfiniBand/Ethernet each, for the compute fabric; " +
			"network latency: NCCL's model (src/graph/tuning.cc)",
	},
	{
		Name:         "pcie-node",
		Description:  "a PCIe server (made up): 8 cards on PCIe, no NVLink, one 100 Gb/s NIC for the node",
		CardsPerNode: 8,
		NICs:         1,
		NICBandwidth: 100 * Gbps,
		NetLatency:   netLatency,
		Source: "made up for the course, plausible for a PCIe-only server: the cards talk over PCIe (their " +
			"PeerBandwidth) and share a single 100 Gb/s Ethernet NIC; network latency: NCCL's model (src/graph/tuning.cc)",
	},
}

// Nodes returns the built-in nodes.
func Nodes() []Node { return append([]Node(nil), nodes...) }

// LookupNode returns the built-in node called name (case-insensitive).
func LookupNode(name string) (Node, error) {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		if strings.EqualFold(n.Name, strings.TrimSpace(name)) {
			return n, nil
		}
		names[i] = fmt.Sprintf("%q", n.Name)
	}
	return Node{}, fmt.Errorf("profile: unknown node %q; known nodes: %s", name, strings.Join(names, ", "))
}
