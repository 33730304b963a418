// Package tensor is gpukit's tensor and autograd layer: a small, readable
// PyTorch core. Storage and strides follow gonum/mat and PyTorch; autograd
// follows micrograd, each op's backward written right beside its forward.
//
// # Storage, tensors, views
//
// A Storage owns exactly one allocator block on one device (or a host
// buffer, pinned or pageable). A Tensor is storage + offset + shape +
// strides + dtype. Element idx lives at storage element
//
//	StorageOffset() + Σ idx[k]·Stride()[k]      (ElementOffset)
//
// whose address is Storage().DataPtr() + that·itemsize (ElementAddr);
// DataPtr() is the address of element 0. Views (View, Reshape when
// possible, Transpose, T, Permute, Narrow, Slice, Select, Expand, Squeeze,
// Unsqueeze, Flatten, Detach, Contiguous of a contiguous tensor) share the
// storage and allocate nothing. View never copies and panics on a layout it
// cannot express, suggesting Reshape or Contiguous; Reshape copies only
// then. Expand uses stride 0. Clone always copies.
//
// Creation: Zeros, Ones, Full, Empty, Arange, Rand, Randn, Randint,
// Randperm, FromSlice, Scalar, ZerosLike, and TryEmpty (Empty returning its
// error). Options say where and how: On(dev), OnHost(pinned), a Dtype
// (Float32 default,
// Float64, Float16, BFloat16, Int64, Int32, Bool), RequiresGrad(),
// WithGenerator(NewGenerator(seed)). Without On/OnHost tensors go to
// device.Default() (sim:0). The default generator is seeded with 0
// (ManualSeed reseeds it). Float16/BFloat16 are stored as 16-bit patterns
// (round to nearest even) and computed in float32.
//
// Every op computes through one route, the backend.Compute of the memory
// its tensors live on (compute.go): on sim and host memory the CPU kernels
// of gpukit/kernels (gpukit/device/cpucompute), on a cuda device its
// cuBLAS and NVRTC kernels (values created and read through host copies),
// on a meta device nothing: ops there compute shapes and allocate (so the
// allocator's statistics are right) but compute no values; reading one
// panics. A kernel a backend lacks (a backend.UnsupportedError) and the
// few host-only kernels (compute_hostonly.go) on a device whose memory
// the host cannot read refuse with a clear error naming the op, the
// device and the way out (To("sim:0")). Every op charges its modelled
// cost (flops, bytes) to the device with Launch, once, on every device.
//
// # Errors
//
// Misuse (shape, dtype or device mismatch, use after Release, autograd
// rules) panics with an *Error whose message starts with "tensor: ".
// Every size computed from user input (creation shapes, View, Reshape,
// Expand, broadcasting, Cat, Narrow, Slice, Arange's bounds) is checked
// first: a shape whose element count or byte size overflows, a negative
// size, or a NaN or infinite Arange bound is refused with an *Error, never
// wrapped around into a small allocation; so is a host tensor larger than
// the machine's memory (on Linux), which Go could only answer with a fatal
// error. Try(nil) is an error too. In-place and out= arithmetic follows
// PyTorch's casting rule: a result type the destination cannot hold (a
// Bool tensor plus an integer, an integer tensor times a float, true
// division of integers) is refused ("result type Long can't be cast to
// the desired output type Bool").
// Allocation failure inside an op or a creation function panics with the
// allocator's error unchanged (*alloc.OutOfMemoryError). Try(fn) converts
// both kinds of panic into an error at an API boundary:
//
//	err := tensor.Try(func() { y = x.Matmul(w) })
//	var oom *alloc.OutOfMemoryError
//	if errors.As(err, &oom) { ... }
//
// TryEmpty is the one creation function that returns its error directly.
// When an op or a backward pass runs out of memory part way, the tensors
// it had already handed out are released, but temporaries inside the op
// that failed are left to the collector fallback: CollectGarbage (or the
// next collection) returns them, so a program that retries after an
// out-of-memory error should call it first.
//
// # Releasing memory
//
// Go has a collector, not reference counts: x = nil frees nothing until
// the collector runs. Release gives deterministic release: each Tensor
// handle holds one reference to its storage (views, tensors saved for
// backward and aliases hold their own) and one to its autograd node, and
// the last Release of a storage returns the block to the allocator at
// once. A released tensor panics when used, naming its shape.
//
// As a fallback, every Tensor handle carries a runtime.AddCleanup that
// drops that handle's references when the collector finds the tensor
// unreachable without Release having been called; Release stops it
// (runtime.Cleanup.Stop), so each reference is dropped exactly once and
// the counts never go stale: a view dropped without Release stops
// counting once it is collected, and the Release of the last live tensor
// then frees the storage. The cleanup's argument is an inner object that
// never points back to the Tensor. Cleanups run asynchronously, after a
// collection; CollectGarbage runs one and waits for them (a tool for
// lessons, tests and leak hunting). Go's liveness is precise: a tensor
// whose variable is not used any more may be collected early (tests that
// compare memory with a baseline use runtime.KeepAlive). Rule: every
// function that returns a *Tensor returns a new object that holds its own
// reference and that the caller may Release — even when it shares storage
// (views, Contiguous of a contiguous tensor, To the same device).
//
// # Autograd
//
// Ops on tensors that require grad record a node on a dynamic tape; the
// tensors a node saves hold references to their storage and show in the
// allocator's statistics until Backward releases them (unless
// RetainGraph()); a second Backward through released nodes fails with a
// clear error. A node saves only what the gradients it will compute use,
// as PyTorch's generated code does (should_compute_output): x.Matmul(w)
// saves w when x requires grad and x when w does, so a frozen layer (w
// without grad) applied to an input that needs none keeps nothing, and
// one whose input needs a gradient keeps w but not the input. Node names
// are the grad_fn names PyTorch prints (AddBackward0 also for x + 1,
// SumBackward0 and MeanBackward0 for full reductions, SumBackward1 and
// MeanBackward1 over dims, MmBackward0 for a 2-d Matmul; see Matmul for
// batched ones). Nodes are reference counted as in PyTorch: a node is
// referenced by the tensors whose GradFn it is and by the later nodes that
// use it; when the last reference goes (the outputs and the loss released
// or collected), it releases its saved tensors and its references to the
// nodes before it. Releasing a loss frees its graph at once; a graph
// shared by two losses lives until both are released; keeping a loss (in
// a slice, say) keeps its graph. Detach makes a new tensor on the same
// storage without history and frees nothing. Gradients accumulate into
// leaves' Grad(); ZeroGrad zeroes in place, SetGrad(nil) frees. Every
// storage has a version counter that in-place ops bump; Backward fails,
// naming the node (e.g. ExpBackward0), when a saved tensor changed since
// it was saved. In-place ops are refused on a leaf that requires grad (and
// on its views) while grad mode is on, and are legal on non-leaves (y :=
// x.Pow(2); y.AddInPlace(1)). Backward runs with grad mode off (no
// higher-order gradients). Backward passes may run on several goroutines
// at once: gradients reaching a shared leaf are accumulated under the
// leaf's lock, so none is lost (PyTorch's AccumulateGrad).
//
// Grad modes are per goroutine, like PyTorch's per-thread modes.
// NoGrad(fn): nothing is recorded or saved; results are normal tensors.
// InferenceMode(fn): also nothing recorded; views and ops are allowed
// inside; tensors created there are inference tensors which, outside
// InferenceMode, cannot be saved for backward, modified in place or made to
// require grad (Clone them). A goroutine started inside a scope does not
// inherit it. The mode is looked up by goroutine id only while some scope
// is active anywhere (an atomic counter), so ordinary training pays nothing.
//
// WithSavedTensorHooks(pack, unpack, fn) intercepts every tensor saved
// inside fn (checkpointing and CPU offload build on it); see its doc for
// who owns what.
//
// # Adding an op
//
// An op is one function in one file (see ops_pointwise.go for models):
//
//  1. Check operands: x.live("Op"); checkPair("Op", a, b) for two tensors.
//  2. Allocate the result: out := empty(a.outMem(), shape, a.dtype).
//  3. Compute through the kernel seam in compute.go (binaryKernel,
//     unaryKernel, copyKernel, sumKernel, matmulKernel, whereKernel, ...;
//     a function without a kernel op becomes a ops.Unary or
//     BinaryOp, or a Compute method, so that every device runs it) and
//     charge the cost: out.charge("Op", flops, a, b).
//  4. Return record(out, "OpBackward0", inputs, saved, backward). record
//     does nothing when no input requires grad or grad mode is off. The
//     backward function receives the output gradient g, the saved tensors
//     in order and which inputs need a gradient (skip others with when),
//     and returns one gradient per input with the input's shape (use
//     sumTo/reduced to undo broadcasting). It must capture only shapes and
//     scalars, never forward tensors: what it needs, it saves, so memory is
//     accounted for and the version check applies. Save an operand that
//     only other inputs' gradients use as savedIf(operand, those inputs):
//     nil, nothing saved, when none of them requires grad, as in PyTorch.
//     It may return g itself. Release temporaries it creates.
//  5. In-place variants call checkInPlace first (and checkNoPartialOverlap
//     for each tensor operand: Note [Memory overlap of writes] in
//     overlap.go) and t.bump() after the kernel, then record(t, ...) with t
//     among the inputs.
//  6. Test: a forward-value case in TestForwardValues and a case in the
//     TestGradcheck table (gradcheck.Assert on float64 inputs).
//
// # Ops
//
// Pointwise (ops_pointwise.go), broadcasting where two tensors meet: Add,
// Sub, Mul, Div (tensor or number), Neg, Pow, Exp, Log, Sqrt, Abs, Relu,
// Sigmoid, Tanh, Gelu (exact erf form), Clamp(lo, hi), Maximum, Minimum.
// In place (the version counter is bumped; refused on a leaf that
// requires grad outside NoGrad): AddInPlace, SubInPlace, MulInPlace,
// DivInPlace, ReluInPlace, ClampInPlace, Fill, CopyFrom (also across
// devices and the host, into the existing memory). Out= variants
// that allocate nothing and do not support autograd: AddOut, SubOut,
// MulOut, DivOut, MatmulOut, IndexSelectOut.
//
// Comparisons (ops_compare.go) return Bool tensors and have no gradient:
// Gt, Lt, Ge, Le, Eq (tensor or number); Where(cond, a, b) selects and
// routes the gradient to the branch taken.
//
// Reductions (ops_reduce.go): Sum, SumDims, Mean, MeanDims (contiguous
// float32/float64 inputs reduce through kernels.Reduce), Var(dims,
// keepdim, unbiased), Max/Min(dim, keepdim) (the gradient goes to the
// first extremum; the Int64 positions are saved), ArgMax/ArgMin(dim,
// keepdim) (Int64, no gradient).
//
// Matmul and MatmulOut (ops_matmul.go). Indexing and joining
// (ops_index.go), with Int64 or Int32 index tensors that are saved for
// backward: IndexSelect, Gather, ScatterAdd (out of place), Cat, Stack.
//
// Neural-network ops (ops_nn.go), each one fused node: Softmax,
// LogSoftmax (stable), Dropout(p, train, gen) (eval: the input itself, no
// allocation; train: saves a one-byte Bool mask), MSELoss (mean),
// CrossEntropy(logits [N, C], targets [N]) (mean, saves the [N, C]
// log-softmax).
//
// Normalisation (ops_norm.go), one node each as in PyTorch: LayerNorm
// (NativeLayerNormBackward0: saves the input, weight, bias and a float32
// mean and rstd per row) and BatchNorm (NativeBatchNormBackward0: in
// training saves the input, weight and a save_mean and save_invstd per
// channel, and updates the running statistics in place; in eval uses and
// saves them).
//
// Optimizer kernels (ops_optim.go): FusedAdam, one pass over a parameter,
// its gradient and Adam's state, allocating nothing (fused=True).
//
// Out-of-place ops on pinned host tensors produce pageable host tensors,
// as in PyTorch.
package tensor
