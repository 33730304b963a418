// Package prune is gpukit's torch.nn.utils.prune: masks that zero some
// weights of a module, with PyTorch's definitions and PyTorch's memory
// behaviour.
//
// Pruning does not make a model smaller. As in PyTorch, pruning the
// parameter "weight" of a module keeps the original values as the
// parameter "weight_orig", adds a buffer "weight_mask" of the same shape
// and dtype, and computes weight = weight_orig · weight_mask again before
// every forward pass. A pruned weight of W bytes costs 3·W bytes (the
// original, the mask and the computed weight), and 4·W for a moment while
// a forward pass replaces the computed weight. Remove makes the pruning
// permanent: the zeros are written into the original, the mask and the
// computed weight are freed, and the parameter is called "weight" again,
// still W bytes: a dense tensor full of zeros.
//
// Memory is saved only by storing less. ShrinkOutputs and ShrinkInputs
// turn a Linear whose rows (or columns) were pruned into a smaller Linear
// (KeptSlices says which to keep). ToCSR stores a pruned weight in
// compressed sparse row form (values, column indices, row offsets), which
// is smaller than dense float32 only below a density of about 1/3 with
// int64 indices (1/2 with int32). Its LinearForward runs a row-wise CSR
// kernel (tensor.SparseCSRMatmul) whose modelled time follows the bytes it
// reads, so it beats the dense matmul on the simulated clock about where
// it beats it in memory; BenchmarkCSRVsDense measures both, and the CPU
// time, at 10%, 30% and 50% density.
//
// The methods are PyTorch's:
//
//   - L1Unstructured prunes the entries of smallest absolute value.
//   - RandomUnstructured prunes entries drawn at random.
//   - LnStructured prunes whole slices along a dimension (rows of a
//     Linear's weight for dim 0), those of smallest Ln norm.
//   - GlobalUnstructured ranks the entries of several parameters together
//     and prunes the smallest across all of them.
//
// L1Unstructured, LnStructured and GlobalUnstructured take importance
// scores, as PyTorch's importance_scores: a tensor of the parameter's
// shape that is ranked instead of the parameter's values (ImportanceScores,
// or Param.Scores for GlobalUnstructured). Scores of another shape are an
// error.
//
// An Amount is a Fraction in [0, 1] of the entries (rounded half to even,
// as Python's round) or a Count of entries; for LnStructured, of the
// slices. Pruning a parameter again applies the new method to the entries
// (or slices) still unpruned and combines the masks, as PyTorch's
// PruningContainer does.
//
// Ties: PyTorch chooses the entries to prune with torch.topk, whose CPU
// kernel compares values only and leaves the order of equal values to
// std::partial_sort, so which of two equal entries is pruned is not
// specified. gpukit breaks ties by position: among equal scores the entry
// of lower flat index is pruned first (and, for LnStructured, the slice of
// lower index is kept first). NaN scores rank as torch.topk ranks them:
// above every number.
//
// Go has no setattr, so the pruned module is wrapped: each function
// returns a *Pruned, an nn.Module that stands where the layer stood (put
// it back into its parent, e.g. seq.Layers[0] = p). Its Members are the
// layer's with "weight" replaced by "weight_orig" and "weight_mask", so
// the names in NamedParameters and state dicts are PyTorch's. The layer
// must keep the parameter in an exported *tensor.Tensor field of its
// struct (every layer of package nn does); the field is set to the
// computed weight before each forward.
//
// Bad input (an amount out of range or above the number of entries, a name
// that is not a parameter of the module) returns an error prefixed
// "prune: " and leaves the model as it was.
package prune
