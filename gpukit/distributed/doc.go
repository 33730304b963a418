// Package distributed trains one model on many cards: a process group
// with the collectives data parallelism uses (all-reduce,
// reduce-scatter, all-gather, broadcast), DistributedDataParallel's
// bucketed gradient all-reduce, and ZeRO's stages 1-3 (Rajbhandari et
// al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
// Models", SC'20), which shard the optimizer state, then the gradients,
// then the parameters across the cards, as FSDP's SHARD_GRAD_OP and
// FULL_SHARD do.
//
// # Why a package of its own
//
// DESIGN.md planned gpukit/distributed, and it stays here rather than in
// gpukit/nn/parallel: nn/parallel splits one model across cards (layer
// placement, pipelines), each card holding different layers, while this
// package replicates or shards the same model over many cards, each
// running its own share of the batch. It needs what nn/parallel does
// not: a process group, collectives with a cost model, and an optimizer
// step it can shard (so it imports optim, which nn/parallel does not).
// It mirrors torch.distributed and torch.distributed.fsdp, which PyTorch
// keeps apart from torch.nn.parallel's model parallel helpers too.
//
// # Cards, values and clocks
//
// A Group runs on sim cards (real values, so a step on N cards can be
// compared with one card's) or on meta cards (accounting only, so a
// 70 B-parameter model on 512 cards is measured in seconds). Meta cards
// beyond the sixteen device.Open names come from
// device.New(sim.NewMeta(i, profile)), i up to sim.MaxMetaIndex.
//
// Each collective runs the ring algorithm. Its values follow the ring
// step by step, so sums are added in the ring's order and rounded to the
// dtype after each addition. Its time is modelled on each card's clock,
// on a communication stream of its own (NCCL's): it starts when every
// rank has issued it and its inputs are ready on every rank, and lasts
//
//	all-reduce      2(N-1)·(α + n/N/bw)     each rank sends 2(N-1)/N of the n bytes
//	reduce-scatter   (N-1)·(α + n/N/bw)     (N-1)/N of the input's n bytes
//	all-gather       (N-1)·(α + n/N/bw)     (N-1)/N of the output's n bytes
//	broadcast        (N-1)·α + n/bw         pipelined round the ring
//
// where bw is the bandwidth of the ring's slowest link (device.PeerPath:
// NVLink when both cards of a pair have it, PCIe otherwise) and α, the
// latency of one ring step, is the profile's launch overhead (modelled,
// not measured). Work.Wait makes the default streams wait for a
// collective, so communication overlaps compute until a result is needed.
//
// # Nodes
//
// Without OnNodes every card of a group sits in one node. OnNodes(node)
// puts node.CardsPerNode ranks on each node (a device.Node: dgx-h100,
// pcie-node). Then, as NCCL models it (ncclTopoTuneModel,
// src/graph/tuning.cc of NVIDIA/nccl):
//
//   - bw is the slower of the links inside a node (node.IntraPath) and
//     the node's network, all its NICs together (node.NetworkBandwidth):
//     NCCL's search (src/graph/search.cc) builds rings (channels) that
//     leave and enter each node through a NIC, as many as the NICs can
//     carry, and its bus bandwidth is the channels' sum. One 400 Gb/s
//     NIC per card is thus 400 GB/s for a DGX H100's ring, not 50 GB/s.
//   - the steps NCCL counts as crossing nodes (2·nodes of an all-reduce,
//     nodes-1 of a reduce-scatter or all-gather) cost node.NetLatency
//     instead of α.
//   - an all-reduce takes NCCL's tree instead of the ring when the tree's
//     predicted time is lower: 2·(cards per node - 1 + log₂ nodes) hops
//     of 28 µs, at half of 92 % of bw (NCCL's Simple-protocol figures).
//     That happens for small tensors only; CommStats.TreeCalls counts
//     them, and a tree sends each byte up and down once (2n).
//
// Not modelled in time: NCCL's LL and LL128 protocols (their buffers are,
// below), NVLink SHARP (NVLS) and CollNet,
// the tree's correction factors, and a ring's values still follow the
// ring's order when the tree is timed.
//
// # Memory inside and outside the allocator
//
// Two kinds of communication memory are modelled, and they are counted
// apart. The receive buffer each ring step needs (one chunk of the
// tensor) is allocated through the card's caching allocator for the
// collective's duration, so it shows in MaxMemoryAllocated; this is
// gpukit's choice, a stand-in for the staging a collective needs, and
// the tensors a collective touches are recorded on its stream, as
// ProcessGroupNCCL records them, so that freeing them early is safe.
// NCCL's own buffers (WithNCCLBuffers: NCCL_BUFFSIZE and its LL and
// LL128 siblings, per channel and connection, nccl.go) are raw device
// memory outside the allocator, as on a real card, where they appear in
// nvidia-smi and never in torch.cuda.memory_allocated() or
// memory_reserved(): the allocator's statistics do not count them,
// MemInfo does, like the CUDA context. They are off unless asked for.
//
// # The trainer
//
// Trainer runs data-parallel steps of a multilayer perceptron (Linear
// layers with ReLUs between them, mean squared error) at one of four
// stages: DDP (stage 0), ZeRO1, ZeRO2, ZeRO3. Each layer is one flat
// parameter (weight then bias, FSDP's FlatParameter), padded to a
// multiple of N and sharded into N equal pieces. Mixed precision is
// ZeRO's: float16 (or bfloat16) parameters and gradients, float32 master
// weights and Adam state, so with Adam a parameter costs 2 + 2 + K
// bytes, K = 12, before sharding:
//
//	stage   held per card after a step          ZeRO's name
//	DDP     (2 + 2 + K)·Ψ                        baseline
//	ZeRO1   (2 + 2)·Ψ + K·Ψ/N                    P_os
//	ZeRO2   2·Ψ + (2 + K)·Ψ/N                    P_os+g
//	ZeRO3   (2 + 2 + K)·Ψ/N                      P_os+g+p
//
// These are measured by the allocator, not computed: MeasureMemory builds
// the model on meta cards, takes two steps (the first allocates the
// gradients and optimizer state as it goes) and reads MemoryAllocated.
// Each rank keeps what it owns of every layer in one flat buffer per
// state, as DeepSpeed keeps its partitions, so that the allocator's
// rounding stays negligible even for a thousand cards' small shards.
//
// What each stage does during a step:
//
//   - DDP: the gradients are copied into buckets as backward produces
//     them (bucket_cap_mb, 25 MiB after a first bucket of 1 MiB, layers
//     in backward order, as PyTorch's Reducer assigns them) and each full
//     bucket is all-reduced on the communication stream while backward
//     goes on. The bucket buffers live as long as the trainer; with
//     GradientAsBucketView the gradients are views into them instead of
//     a second copy.
//   - ZeRO1: each layer's gradient is reduce-scattered into this rank's
//     shard of it; the rank updates its shard of the master weights and
//     the 16-bit parameters are all-gathered in place.
//   - ZeRO2: as ZeRO1, but the full gradient of a layer is a temporary
//     freed after its reduce-scatter; only the shard stays.
//   - ZeRO3: before each layer's forward, and again before its backward,
//     its parameters are all-gathered into a temporary full copy that is
//     freed after the layer (FSDP's unshard and reshard); those copies
//     show in the peak. Its traffic is 1.5 times DDP's: two all-gathers
//     and a reduce-scatter of Ψ against one all-reduce (two Ψ). Its
//     gathers and ZeRO-2's reduce-scatters are rate-limited as FSDP's
//     limit_all_gathers does: the host waits for the collective two
//     layers back before it issues another, so that the blocks a
//     communication stream used can be handed out again. By default
//     (Config.Prefetch = GatherOnDemand, gpukit's choice) a layer is
//     gathered just before it computes, and the compute waits for it;
//     PrefetchNext issues the next layer's gather before the current
//     layer computes, one layer ahead at most, as FSDP does by default
//     (BACKWARD_PRE, limit_all_gathers=True): one more gathered layer in
//     the peak, the gathers off the critical path.
//
// With Config.DeepSpeed, stages 1 and 2 follow DeepSpeed's defaults
// (deepspeed/runtime/zero/stage_1_and_2.py) instead of the paper's
// accounting: a reduce bucket of 5e8 16-bit elements during backward,
// and in the step a flat 16-bit copy and a float32 copy of the rank's
// gradient partition while the gradients are held, so the step's peak
// is 2Ψ + (2 + 2 + 4 + K)·Ψ/N; the gradients are freed before the
// update, and 2Ψ + K·Ψ/N stays.
//
// The forward and backward of each layer are written out (the layer's
// input is all it saves; a ReLU's output doubles as its mask), not taped
// by autograd, whose saved weight would keep ZeRO-3's gathered copy
// alive until backward.
//
// Errors of misuse start with "distributed: ".
package distributed
