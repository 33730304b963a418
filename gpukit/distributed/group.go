package distributed

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
	"time"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/profile"
	"github.com/gpumem/course/gpukit/tensor"
)

// Error is the error of a refused process group, collective or trainer;
// its message starts with "distributed: ".
type Error struct{ msg string }

func (e *Error) Error() string { return "distributed: " + e.msg }

func errorf(format string, args ...any) *Error { return &Error{fmt.Sprintf(format, args...)} }

// occupier is what a simulated backend offers to charge a costed
// duration on a stream (sim.Backend.Occupy).
type occupier interface {
	Occupy(s alloc.Stream, d time.Duration)
}

// Group is a process group of N ranks, one per card, joined in a ring
// (rank r sends to rank r+1 mod N), like ProcessGroupNCCL over N GPUs.
// Each rank has a communication stream of its own, as NCCL has; the
// collectives run there and Work.Wait makes the ranks' default streams
// wait for them. The ranks may sit on several nodes (OnNodes).
type Group struct {
	devs  []*device.Device
	comm  []alloc.Stream
	occ   []occupier
	link  string
	bw    float64       // bytes/s of the slowest link of the ring
	alpha time.Duration // latency of one ring step inside a node
	stats []CommStats

	nodes, perNode int           // nodes, and ranks on each (rank r on node r/perNode)
	netAlpha       time.Duration // latency of a ring step between nodes

	ncclAddr  []uint64 // each rank's NCCL buffers, outside the allocator (WithNCCLBuffers)
	ncclBytes int64
}

// CommStats is what one rank's collectives cost: how many ran, the bytes
// this rank sent and the time they kept its communication stream busy.
// TreeCalls counts the all-reduces that took the tree rather than the
// ring (only between nodes).
type CommStats struct {
	Calls     int
	Bytes     int64
	Time      time.Duration
	TreeCalls int
}

// GroupOption configures NewGroup.
type GroupOption func(*groupOptions)

type groupOptions struct {
	node *device.Node
	nccl *NCCLBuffers
}

// OnNodes places the ranks on nodes like node, node.CardsPerNode ranks
// on each in rank order (rank r on node r/CardsPerNode), as torchrun
// numbers the ranks of its nodes. A group of more cards than a node
// holds must fill whole nodes. Inside a node two cards talk by
// node.IntraPath; a ring that spans nodes also crosses the network,
// where NCCL runs one ring per NIC, so the ring's rate is the slower of
// its links inside a node and node.NetworkBandwidth.
func OnNodes(node device.Node) GroupOption {
	return func(o *groupOptions) { o.node = &node }
}

// NewGroup returns a process group over devs, rank r on devs[r]. The
// cards must all be sim (values) or all meta (accounting only), each
// once. Without OnNodes they are one node and the ring's bandwidth is
// that of its slowest link (PeerPath of each neighbouring pair: NVLink
// when both cards have it, else PCIe).
func NewGroup(devs []*device.Device, opts ...GroupOption) (*Group, error) {
	if len(devs) == 0 {
		return nil, errorf("NewGroup: a process group needs at least one device")
	}
	var o groupOptions
	for _, opt := range opts {
		opt(&o)
	}
	N := len(devs)
	g := &Group{devs: devs, bw: math.Inf(1), nodes: 1, perNode: N}
	if o.node != nil {
		if err := o.node.Validate(); err != nil {
			return nil, errorf("NewGroup: %s", strings.TrimPrefix(err.Error(), "profile: "))
		}
		var err error
		if g.nodes, g.perNode, err = onNodes(N, o.node.CardsPerNode); err != nil {
			return nil, errorf("NewGroup: %v", err)
		}
	}
	seen := map[*device.Device]bool{}
	for r, d := range devs {
		switch {
		case d == nil:
			return nil, errorf("NewGroup: device of rank %d is nil", r)
		case seen[d]:
			return nil, errorf("NewGroup: %s is rank %d and an earlier rank; each rank needs a card of its own", d.Name(), r)
		case d.Kind() != devs[0].Kind():
			return nil, errorf("NewGroup: rank 0 is a %s card and rank %d a %s card; use all sim or all meta cards", devs[0].Kind(), r, d.Kind())
		}
		seen[d] = true
	}
	intraPath := device.PeerPath // two cards of one node
	if o.node != nil {
		intraPath = o.node.IntraPath
	}
	for r, d := range devs {
		occ, ok := d.Backend().(occupier)
		if !ok {
			return nil, errorf("NewGroup: %s: process groups run on sim and meta cards (a real GPU would need NCCL, which gpukit does not wrap)", d.Name())
		}
		g.occ = append(g.occ, occ)
		g.comm = append(g.comm, d.NewStream())
		next := (r + 1) % N
		if r/g.perNode == next/g.perNode { // a pair inside one node
			link, bw := intraPath(d.Profile(), devs[next].Profile())
			if bw < g.bw {
				g.link, g.bw = link, bw
			}
		}
		g.alpha = max(g.alpha, d.Profile().LaunchOverhead)
	}
	if g.nodes > 1 {
		if net := o.node.NetworkBandwidth(); net < g.bw {
			g.link, g.bw = profile.LinkNetwork, net
		}
		g.netAlpha = o.node.NetLatency
	}
	g.stats = make([]CommStats, len(devs))
	if o.nccl != nil {
		if err := g.reserveNCCL(*o.nccl); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// onNodes places cards on nodes of perNode cards each: one node when they
// fit in one, else as many whole nodes as they fill (an error when the
// last would be partly full).
func onNodes(cards, perNode int) (nodes, onEach int, err error) {
	switch {
	case cards <= perNode:
		return 1, cards, nil
	case cards%perNode != 0:
		return 0, 0, fmt.Errorf("%d cards do not fill nodes of %d cards; use at most %d or a multiple of %d", cards, perNode, perNode, perNode)
	}
	return cards / perNode, perNode, nil
}

// Nodes is the number of nodes the ranks sit on (1 without OnNodes).
func (g *Group) Nodes() int { return g.nodes }

// Size is the number of ranks.
func (g *Group) Size() int { return len(g.devs) }

// Device returns rank r's card.
func (g *Group) Device(r int) *device.Device { return g.devs[r] }

// Devices returns the cards, rank order.
func (g *Group) Devices() []*device.Device { return append([]*device.Device{}, g.devs...) }

// CommStream returns rank r's communication stream.
func (g *Group) CommStream(r int) alloc.Stream { return g.comm[r] }

// Link names the ring's slowest link ("NVLink", "PCIe", or "network"
// between nodes) and its bandwidth in bytes/s.
func (g *Group) Link() (string, float64) { return g.link, g.bw }

// Stats returns rank r's communication so far.
func (g *Group) Stats(r int) CommStats { return g.stats[r] }

// ResetStats clears every rank's communication statistics.
func (g *Group) ResetStats() {
	for r := range g.stats {
		g.stats[r] = CommStats{}
	}
}

// RingTime is the modelled duration of steps ring steps that each move
// chunk bytes from every rank to the next: steps·(α + chunk/bw), with α
// the launch overhead of the profile (the latency of one step) and bw
// the slowest link of the ring. It counts every step's latency as one
// inside a node; the collectives of a group on several nodes add the
// network's latency for the steps that cross nodes.
func (g *Group) RingTime(steps int, chunk int64) time.Duration {
	return g.ringTime(steps, 0, chunk)
}

// ringTime is steps ring steps of chunk bytes, inter of them counted as
// crossing nodes: steps·chunk/bw + (steps-inter)·α + inter·α_net (each
// step's transfer rounded to the nanosecond). The
// count of crossing steps is NCCL's (nInterSteps in ncclTopoTuneModel,
// src/graph/tuning.cc): 2·nodes for an all-reduce, nodes-1 for a
// reduce-scatter or an all-gather.
func (g *Group) ringTime(steps, inter int, chunk int64) time.Duration {
	if steps <= 0 {
		return 0
	}
	inter = min(inter, steps)
	return time.Duration(steps-inter)*g.alpha + time.Duration(inter)*g.netAlpha +
		time.Duration(steps)*time.Duration(math.Round(float64(chunk)/g.bw*1e9))
}

// treeHop is the latency of one hop of NCCL's tree with the Simple
// protocol, inside a node or between nodes
// (hwLat[...][NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] = 28 µs for NVLink, PCIe
// and the network in src/graph/tuning.cc).
const treeHop = 28 * time.Microsecond

// treeTime is NCCL's model of an all-reduce of n bytes by its tree
// (ncclTopoTuneModel): a chain through each node's cards and a binary
// tree between nodes, reduced up and broadcast down, so 2·(cards per
// node - 1 + log₂ nodes) hops; its bus bandwidth is 92 % of the ring's
// links and its algorithm bandwidth half of that.
func (g *Group) treeTime(n int64) time.Duration {
	hops := 2 * (g.perNode - 1 + bits.Len(uint(g.nodes)) - 1)
	return time.Duration(hops)*treeHop + time.Duration(math.Round(float64(n)/(0.5*0.92*g.bw)*1e9))
}

// Work is a collective queued on the ranks' communication streams
// (torch.distributed's Work). Wait makes each rank's default stream wait
// for it.
type Work struct {
	g   *Group
	end []*device.Event
}

// Wait makes later work on every rank's default stream start after the
// collective (work.wait() in PyTorch, which waits on the GPU, not the
// host).
func (w *Work) Wait() {
	if w == nil {
		return
	}
	for r, d := range w.g.devs {
		d.WaitEvent(d.DefaultStream(), w.end[r])
	}
}

// Sync makes each rank's host wait for the collective (work.synchronize
// followed by a host wait).
func (w *Work) Sync() {
	if w == nil {
		return
	}
	for _, e := range w.end {
		e.Synchronize()
	}
}

// launch queues a collective of duration d that sends sent bytes from
// every rank. It starts, on every rank's communication stream, once every
// rank has issued it and its inputs are ready: at the latest of the
// ranks' default-stream and communication-stream clocks (a ring advances
// only as fast as its slowest member). The blocks it reads and writes are
// recorded on the communication streams (ProcessGroupNCCL records its
// tensors on the NCCL stream), so freeing them right after does not let
// the allocator hand them out before the collective is done.
func (g *Group) launch(d time.Duration, sent int64, blocks [][]*alloc.Block, tree bool) *Work {
	var latest *device.Event
	for r, dev := range g.devs {
		dev.WaitEvent(g.comm[r], dev.RecordEvent(dev.DefaultStream()))
		e := dev.RecordEvent(g.comm[r])
		if latest == nil || e.ElapsedSince(latest) > 0 {
			latest = e
		}
	}
	w := &Work{g: g, end: make([]*device.Event, len(g.devs))}
	for r, dev := range g.devs {
		dev.WaitEvent(g.comm[r], latest)
		g.occ[r].Occupy(g.comm[r], d)
		for _, b := range blocks[r] {
			dev.RecordStream(b, g.comm[r])
		}
		w.end[r] = dev.RecordEvent(g.comm[r])
		g.stats[r].Calls++
		g.stats[r].Bytes += sent
		g.stats[r].Time += d
		if tree {
			g.stats[r].TreeCalls++
		}
	}
	return w
}

// checkRanks checks that ts holds one contiguous live tensor per rank, on
// that rank's card, all of one dtype, with numel elements each (any
// numel when numel < 0).
func (g *Group) checkRanks(op, what string, ts []*tensor.Tensor, numel int) error {
	if len(ts) != len(g.devs) {
		return errorf("%s: %d %s tensors for %d ranks; pass one per rank", op, len(ts), what, len(g.devs))
	}
	for r, t := range ts {
		switch {
		case t == nil:
			return errorf("%s: %s tensor of rank %d is nil", op, what, r)
		case t.Released():
			return errorf("%s: %s tensor of rank %d was released", op, what, r)
		case t.Device() != g.devs[r]:
			return errorf("%s: %s tensor of rank %d lives on %s, not on the rank's card %s", op, what, r, t.DeviceName(), g.devs[r].Name())
		case !t.IsContiguous():
			return errorf("%s: %s tensor of rank %d is not contiguous; collectives move flat buffers", op, what, r)
		case t.Dtype() != ts[0].Dtype():
			return errorf("%s: %s tensor of rank %d is %s, rank 0's is %s", op, what, r, t.Dtype(), ts[0].Dtype())
		case !t.Dtype().IsFloat():
			return errorf("%s: %s tensors are %s; collectives here reduce floating-point tensors", op, what, t.Dtype())
		case numel >= 0 && t.Numel() != numel:
			return errorf("%s: %s tensor of rank %d has %d elements, expected %d", op, what, r, t.Numel(), numel)
		case numel < 0 && t.Numel() != ts[0].Numel():
			return errorf("%s: %s tensor of rank %d has %d elements, rank 0's has %d", op, what, r, t.Numel(), ts[0].Numel())
		}
	}
	return nil
}

// scratch allocates, on every rank's communication stream, the buffer a
// ring step receives into (chunk bytes), through the caching allocator,
// and returns a function that frees them.
func (g *Group) scratch(op string, chunk int64) (func(), error) {
	if chunk <= 0 || len(g.devs) == 1 {
		return func() {}, nil
	}
	bufs := make([]*alloc.Block, 0, len(g.devs))
	free := func() {
		for r, b := range bufs {
			g.devs[r].Free(b)
		}
	}
	for r, d := range g.devs {
		b, err := d.Malloc(chunk, g.comm[r])
		if err != nil {
			free()
			return nil, fmt.Errorf("distributed: %s: rank %d's receive buffer: %w", op, r, err)
		}
		bufs = append(bufs, b)
	}
	return free, nil
}

func blocksOf(tss ...[]*tensor.Tensor) [][]*alloc.Block {
	out := make([][]*alloc.Block, len(tss[0]))
	for _, ts := range tss {
		for r, t := range ts {
			out[r] = append(out[r], t.Storage().Block())
		}
	}
	return out
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// AllReduce sums ts (one tensor per rank, same shape and dtype) in place
// on every rank, by the ring algorithm: a reduce-scatter of N chunks in
// N-1 steps, then an all-gather of the reduced chunks in N-1 more. Each
// rank sends 2(N-1)/N of the tensor's bytes; the collective lasts
// RingTime(2(N-1), bytes/N). Each rank's receive buffer of one chunk is
// allocated through the caching allocator for the collective's length.
func (g *Group) AllReduce(ts []*tensor.Tensor) (*Work, error) {
	const op = "AllReduce"
	if err := g.checkRanks(op, "input", ts, -1); err != nil {
		return nil, err
	}
	n := len(g.devs)
	chunk := ceilDiv(ts[0].Nbytes(), int64(n))
	free, err := g.scratch(op, chunk)
	if err != nil {
		return nil, err
	}
	defer free()
	if ts[0].Numel() > 0 && n > 1 {
		ringAllReduce(ts)
	}
	d, sent, tree := g.ringTime(2*(n-1), 2*g.nodes, chunk), 2*int64(n-1)*chunk, false
	if g.nodes == 1 {
		d = g.ringTime(2*(n-1), 0, chunk)
	} else if td := g.treeTime(ts[0].Nbytes()); td < d {
		// NCCL takes the algorithm its model predicts is faster
		// (getAlgoInfo); the tree sends every byte up once and down once.
		d, sent, tree = td, 2*ts[0].Nbytes(), true
	}
	return g.launch(d, sent, blocksOf(ts), tree), nil
}

// ReduceScatter sums the ranks' inputs and leaves chunk r of the sum in
// out[r] (reduce_scatter_tensor): each input holds N·k elements, each
// output k. An output may be rank r's chunk of its own input (a view),
// as ZeRO's in-place reduction uses it. Each rank sends (N-1)/N of the
// input's bytes, in RingTime(N-1, bytes/N).
func (g *Group) ReduceScatter(out, in []*tensor.Tensor) (*Work, error) {
	const op = "ReduceScatter"
	if err := g.checkChunks(op, out, in, true); err != nil {
		return nil, err
	}
	chunk := out[0].Nbytes()
	free, err := g.scratch(op, chunk)
	if err != nil {
		return nil, err
	}
	defer free()
	if out[0].Numel() > 0 {
		ringReduceScatter(out, in)
	}
	return g.launchRing(chunk, out, in), nil
}

// checkChunks checks the tensors of ReduceScatter (outIsChunk) and
// AllGather: one per rank on each side, of one dtype, the chunks of k
// elements and the whole tensors of N·k.
func (g *Group) checkChunks(op string, out, in []*tensor.Tensor, outIsChunk bool) error {
	chunks, wholes, chunkName, wholeName := in, out, "input", "output"
	if outIsChunk {
		chunks, wholes, chunkName, wholeName = out, in, "output", "input"
	}
	if err := g.checkRanks(op, chunkName, chunks, -1); err != nil {
		return err
	}
	if err := g.checkRanks(op, wholeName, wholes, chunks[0].Numel()*len(g.devs)); err != nil {
		return err
	}
	if in[0].Dtype() != out[0].Dtype() {
		return errorf("%s: input is %s and output %s; they must match", op, in[0].Dtype(), out[0].Dtype())
	}
	return nil
}

// launchRing launches the N-1 ring steps of a reduce-scatter or an
// all-gather, each rank sending one chunk of chunk bytes a step.
func (g *Group) launchRing(chunk int64, out, in []*tensor.Tensor) *Work {
	n := len(g.devs)
	return g.launch(g.ringTime(n-1, g.nodes-1, chunk), int64(n-1)*chunk, blocksOf(out, in), false)
}

// AllGather concatenates the ranks' inputs (k elements each) into every
// rank's output (N·k, all_gather_into_tensor). An input may be rank r's
// chunk of its own output (in place). Each rank sends (N-1)/N of the
// output's bytes, in RingTime(N-1, bytes/N); the chunks land in the
// output, so no receive buffer is needed.
func (g *Group) AllGather(out, in []*tensor.Tensor) (*Work, error) {
	const op = "AllGather"
	if err := g.checkChunks(op, out, in, false); err != nil {
		return nil, err
	}
	chunk := in[0].Nbytes()
	if in[0].Numel() > 0 {
		ringAllGather(out, in)
	}
	return g.launchRing(chunk, out, in), nil
}

// Broadcast copies root's tensor into every rank's, in place. The ring
// pipelines it: each rank but the last forwards what it receives, so it
// lasts (N-1)·α + bytes/bw and every rank but the last sends the whole
// tensor once.
func (g *Group) Broadcast(ts []*tensor.Tensor, root int) (*Work, error) {
	const op = "Broadcast"
	if root < 0 || root >= len(g.devs) {
		return nil, errorf("%s: root %d is not a rank of a group of %d", op, root, len(g.devs))
	}
	if err := g.checkRanks(op, "input", ts, -1); err != nil {
		return nil, err
	}
	n := len(g.devs)
	if ts[0].Numel() > 0 {
		ringBroadcast(ts, root)
	}
	var d time.Duration
	if n > 1 {
		d = time.Duration(n-g.nodes)*g.alpha + time.Duration(g.nodes-1)*g.netAlpha +
			time.Duration(math.Round(float64(ts[0].Nbytes())/g.bw*1e9))
	}
	return g.launch(d, ts[0].Nbytes(), blocksOf(ts), false), nil
}
