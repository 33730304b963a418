// Package amp is automatic mixed precision: Autocast runs a forward pass
// with matmuls in float16 or bfloat16 and the numerically sensitive ops in
// float32, by PyTorch's CUDA op lists, and GradScaler keeps float16
// gradients from underflowing (torch.amp).
//
// What it saves is memory you can measure: the activations that matmuls
// and the ops after them save for backward are half the size; the
// parameters stay float32 (their float16 casts, cached for the length of
// the Autocast region, come on top: CacheBytes), and so do the
// gradients and the optimizer state. Float64 autocast is refused.
package amp
