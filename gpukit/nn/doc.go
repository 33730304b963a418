// Package nn is gpukit's torch.nn: modules whose parameters, buffers,
// gradients and saved activations all show in the allocator's statistics.
//
// A Module has a Forward function and lists what it owns (Members):
// named parameters (leaves that require grad), named buffers (state that
// is saved and moved but not trained, such as BatchNorm's running
// statistics) and named children. NamedParameters, NamedBuffers,
// Parameters, Train, Eval, ZeroGrad, NumParams, NumBuffers, Nbytes and
// Release walk a whole model. Names are PyTorch's ("0.weight",
// "attn.in_proj_weight"), so state dicts exchange with PyTorch.
//
// Layers: Linear, Embedding, LayerNorm, BatchNorm1d, Dropout, ReLU, GELU,
// Sequential, MultiheadAttention and a pre-norm transformer Block.
// Parameters are initialised as PyTorch initialises them (Linear:
// kaiming_uniform_(a=√5), i.e. U(±1/√in), and a bias U(±1/√in);
// Embedding: N(0, 1); LayerNorm and BatchNorm: ones and zeros;
// MultiheadAttention: xavier_uniform_ in-projection, zero biases), drawn
// from the generator passed with tensor.WithGenerator (or the default
// one), so one seed gives bitwise-equal models. Constructors take tensor
// options: tensor.On(dev), a dtype, a generator.
//
// Forward returns a tensor the caller owns and releases its own
// intermediates at once, so what stays allocated after a forward pass is
// exactly what autograd saved for backward. Every layer saves what
// PyTorch saves: LayerNorm and BatchNorm1d are single ops with their own
// backward (native_layer_norm, native_batch_norm) that keep the input and
// two statistics per row or feature.
//
// Misuse panics with an *Error ("nn: ..."); state dicts (SaveFile,
// LoadFile) return errors.
package nn
