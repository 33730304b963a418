// Package checkpoint trades compute for memory: activation checkpointing
// as torch.utils.checkpoint does it. A checkpointed segment keeps only its
// input between forward and backward; the tensors its ops would have
// saved are recomputed when backward needs them.
//
// Checkpoint(fn, x) has PyTorch's two modes. Non-reentrant (the default)
// runs fn under saved-tensor hooks that keep a small handle instead of
// each saved tensor, and recomputes the whole segment at the first unpack
// in backward; it saves the segment's input for backward before that
// (tensor.SaveForBackward, PyTorch's _NoopSaveInputs), so saved-tensor
// hooks around the checkpoint see the input: offloading it to the host
// works as save_on_cpu around a checkpoint does. Reentrant (Reentrant()) runs fn under NoGrad and attaches
// a custom backward node that recomputes fn with grad enabled and runs a
// nested Backward; as in PyTorch it records nothing when the input does
// not require grad. Both save the random generators' states (the default
// generator and those of WithGenerators) and restore them for the
// recomputation, so a dropout draws the same mask and gradients equal
// those without checkpointing, bitwise. An autocast region around the
// forward is restored around the recomputation too.
//
// Sequential(layers, n, x) is checkpoint_sequential: n segments, every
// one but the last checkpointed. Checkpointing every single layer saves
// nothing: each checkpoint still keeps its input, which is the previous
// layer's output, i.e. exactly what the layer would have saved.
package checkpoint
