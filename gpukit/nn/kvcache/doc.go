// Package kvcache runs a causal transformer block (nn.Block)
// incrementally, for autoregressive generation: the keys and values of
// the tokens already seen are kept, so each new token costs one row of
// attention instead of the whole sequence again.
//
// The cache grows by one [B, H, 1, hd] key and value per token and layer;
// how it grows is a memory decision, and the two strategies here give the
// same outputs, bitwise:
//
//   - Preallocated keeps K and V buffers for the maximum length, allocated
//     once, and writes each step's keys into place: no allocation per
//     token for the cache, a constant footprint, no fragmentation.
//   - Concat grows K and V with tensor.Cat every step (the naive
//     torch.cat((past, new), dim=2)): each step allocates a new, larger
//     tensor and frees the old one, so the allocator sees a new size every
//     step, splits and caches blocks, and for a moment holds both the old
//     and the new cache.
//
// Step runs any number of new tokens at once (a chunk), each attending to
// the cache and to the earlier tokens of its chunk; Prefill feeds a prompt
// in chunks so that the [B, H, chunk, length] attention scores stay
// within a budget.
package kvcache
