// Package data feeds a model: data sets, a loader that reads and collates
// batches on worker goroutines, a prefetcher that copies them to a device
// while the previous batch is computed, and helpers that move results back
// to the host and process inputs larger than the device in chunks.
//
//	ds, _ := data.NewTensorDataset(values, 1000, 28, 28) // 1000 items of 28×28
//	l, _ := data.NewLoader(ds, data.Options{BatchSize: 64, Shuffle: true, Seed: 1, Workers: 2, Pin: d})
//	defer l.Close()
//	ep, _ := l.Epoch(ctx, 0)
//	p, _ := data.NewPrefetcher(d, ep, d.DefaultStream(), 2)
//	for b, err := p.Next(); err == nil; b, err = p.Next() {
//		// compute on d.DefaultStream() with b.Block, then
//		b.Release()
//	}
//
// # Data sets
//
// A Dataset has a length and returns float32 items by index.
// TensorDataset serves the rows of an array in memory; ShardDataset reads
// items lazily from binary shard files (format in shard.go: magic, version,
// dtype, item shape, count, then the items), written by WriteShard through
// a synced temporary file and a rename. Opening a shard checks its header
// and that the file is exactly as long as the header says; a corrupt or
// truncated shard is a *CorruptShardError naming the file and the byte
// offset.
//
// # Loader
//
// A Loader (torch.utils.data.DataLoader) serves epochs. Each epoch's order
// is 0..n-1, or with Shuffle a permutation computed from Seed and the epoch
// number by code in this package (SplitMix64, Fisher-Yates), so the same
// seed gives the same order on every machine and Go version. Batches hold
// BatchSize items (the last may be smaller unless DropLast), collated by
// Stack or a Collate of your own, in page-locked memory of a device when
// Pin is set. With Workers > 0, batch k is loaded by worker k mod Workers
// and each worker keeps up to Prefetch batches ready; Next returns them in
// order. A worker's error or panic is returned by Next and ends the epoch.
// Closing the epoch or the loader, or cancelling the context, stops every
// worker and waits for it: no goroutine outlives the epoch. A closed loader
// or epoch returns ErrClosed.
//
// # Prefetcher
//
// A Prefetcher keeps depth batches (2: double buffering, 3: triple) on
// their way to the device: each batch is allocated on the prefetcher's
// copy stream and copied there asynchronously (pinned host memory makes the
// copy asynchronous; from pageable memory the host waits and nothing
// overlaps). An event recorded after each copy makes the compute stream
// wait for that batch only. Release records the compute stream on the
// block, as torch's Tensor.record_stream does, so the caching allocator
// does not hand the block to a later copy while compute may still read it
// (COURSE.md, mistake 9).
//
// # Offloading and chunks
//
// CopyToHostChunked copies a device result back into page-locked host
// memory in chunks on a side stream and records that stream on the block.
// MapChunks runs a function over an input larger than the device, chunk by
// chunk, sized to a memory budget; the next chunk's compute overlaps the
// previous chunk's copy back, and at most one output is in flight, so the
// allocator's peak stays within the budget.
//
// Grad modes: loader workers need no grad-mode scope (they run no tensor
// ops); see gpukit/tensor for why a goroutine that never enters one pays
// nothing for the mode lookup.
package data
