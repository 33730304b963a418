package tensor

import "slices"

// matmulShapes checks a @ b and returns the output shape and the
// broadcast batch shape.
func matmulShapes(op string, a, b *Tensor) (out, batch []int) {
	if len(a.shape) < 2 || len(b.shape) < 2 {
		panicf("%s: both arguments must have at least 2 dimensions, got %s and %s (Unsqueeze a vector first)", op, fmtShape(a.shape), fmtShape(b.shape))
	}
	ra, rb := len(a.shape), len(b.shape)
	m, k, k2, n := a.shape[ra-2], a.shape[ra-1], b.shape[rb-2], b.shape[rb-1]
	if k != k2 {
		panicf("%s: mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)", op, m, k, k2, n)
	}
	batch = broadcastShapes(op, a.shape[:ra-2], b.shape[:rb-2])
	out = append(slices.Clone(batch), m, n)
	return out, batch
}

// matmulInto runs the kernel for out = a @ b with batch broadcasting. It
// fails, computing nothing, only when the device cannot allocate the
// stream's cuBLAS workspace, which the first product on a stream takes
// after its output and its operands' copies, as PyTorch's gemm does when it
// takes the cuBLAS handle (device.BlasWorkspace).
func matmulInto(out, a, b *Tensor, batch []int) error {
	a, releaseA := blasOperand(a)
	defer releaseA()
	b, releaseB := blasOperand(b)
	defer releaseB()
	if err := out.st.core.mem.blasWorkspace(); err != nil {
		return err
	}
	ra, rb := len(a.shape), len(b.shape)
	al := a.layoutAs(append(slices.Clone(batch), a.shape[ra-2:]...))
	bl := b.layoutAs(append(slices.Clone(batch), b.shape[rb-2:]...))
	matmulKernel(out, al, bl)
	m, n, k := out.shape[len(out.shape)-2], out.shape[len(out.shape)-1], a.shape[ra-1]
	out.charge("Matmul", 2*int64(numel(batch))*int64(m)*int64(n)*int64(k), a, b)
	return nil
}

// blasOperand returns t when its matrices are in a layout BLAS reads
// (row- or column-major, any leading dimension), else a contiguous copy of
// it and the function that frees the copy. The copy is PyTorch's: cuBLAS
// reads only those layouts, so prepare_matrix_for_cublas clones an expanded
// gradient (stride 0) or a stepped slice. It is device memory, served by
// the allocator and given back when the product is done, so it shows in
// peak memory as in PyTorch.
func blasOperand(t *Tensor) (*Tensor, func()) {
	r := len(t.shape)
	if _, _, ok := gemmLayout(t.shape[r-2], t.shape[r-1], t.strides[r-2], t.strides[r-1]); ok || t.Numel() == 0 {
		return t, func() {}
	}
	c := empty(t.outMem(), t.shape, t.dtype)
	copyKernel(c, t)
	c.charge("copy", 0, t)
	return c, c.Release
}

// Matmul returns the matrix product t @ b for 2-d tensors, or the batched
// product over leading dimensions, which broadcast (torch.matmul for
// inputs of rank ≥ 2). For backward it saves b when t needs a gradient
// and t when b needs one (PyTorch's rule), so a constant weight with an
// input that requires grad keeps the weight, not the input, and a frozen
// layer keeps no activation.
//
// The node is MmBackward0 for two 2-d tensors, as torch.matmul's is. For
// batched inputs it is BmmBackward0: PyTorch reshapes them, runs bmm and
// reshapes its result again, so its grad_fn prints UnsafeViewBackward0
// with BmmBackward0 (which saves the operands) as its next function;
// gpukit records the one node that saves.
func (t *Tensor) Matmul(b *Tensor) *Tensor {
	if y, ok := autocast2(castLower, t, b, (*Tensor).Matmul); ok {
		return y
	}
	t.live("Matmul")
	b.live("Matmul")
	checkPair("Matmul", t, b)
	shape, batch := matmulShapes("Matmul", t, b)
	out := empty(t.outMem(), shape, t.dtype)
	if err := matmulInto(out, t, b, batch); err != nil {
		out.Release()
		panicAlloc(err)
	}
	as, bs := t.shape, b.shape
	name := "MmBackward0"
	if len(as) > 2 || len(bs) > 2 {
		name = "BmmBackward0"
	}
	save := []*Tensor{savedIf(t, b), savedIf(b, t)}
	// An operand that is a column-major matrix (W.T() in Linear) gets its
	// gradient computed transposed, so that it comes out in the operand's
	// own layout: PyTorch's mm_mat1_backward and mm_mat2_backward. Then
	// the weight's gradient is dense in the weight's layout and becomes
	// its .grad without a copy.
	mm := len(as) == 2 && len(bs) == 2
	colA, colB := mm && columnMajor(t), mm && columnMajor(b)
	return record(out, name, []*Tensor{t, b}, save, func(g *Tensor, saved []*Tensor, needs []bool) []*Tensor {
		a, b := saved[0], saved[1]
		return []*Tensor{
			when(needs[0], func() *Tensor {
				if colA { // (b @ gᵀ)ᵀ
					return transposedProduct(b, g, false)
				}
				bt := b.Transpose(-1, -2) // g @ bᵀ
				defer bt.Release()
				return reduced(g.Matmul(bt), as)
			}),
			when(needs[1], func() *Tensor {
				if colB { // (gᵀ @ a)ᵀ
					return transposedProduct(g, a, true)
				}
				at := a.Transpose(-1, -2) // aᵀ @ g
				defer at.Release()
				return reduced(at.Matmul(g), bs)
			}),
		}
	})
}

// columnMajor reports whether t is a dense column-major matrix (strides
// [1, rows]): a 2-d transpose of a contiguous one.
func columnMajor(t *Tensor) bool {
	return len(t.shape) == 2 && t.shape[0] > 1 && t.shape[1] > 1 && t.strides[0] == 1 && t.strides[1] == t.shape[0]
}

// transposedProduct returns (x @ yᵀ)ᵀ, or (xᵀ @ y)ᵀ when transposeX, as
// a transposed view of the product.
func transposedProduct(x, y *Tensor, transposeX bool) *Tensor {
	var p *Tensor
	if transposeX {
		xt := x.Transpose(0, 1)
		p = xt.Matmul(y)
		xt.Release()
	} else {
		yt := y.Transpose(0, 1)
		p = x.Matmul(yt)
		yt.Release()
	}
	defer p.Release()
	return p.Transpose(0, 1)
}

// MatmulOut writes a @ b into the preallocated out and returns out. For
// operands in a layout BLAS reads (contiguous, or transposed) it allocates
// nothing (check Stats()["allocation.all.allocated"]), which is what
// preallocated buffers are for (lesson 04); any other operand is first
// copied contiguous, as in PyTorch. out must share no element with a or b;
// another view of their storage is fine.
func MatmulOut(out, a, b *Tensor) *Tensor {
	a.live("MatmulOut")
	b.live("MatmulOut")
	checkPair("MatmulOut", a, b)
	shape, batch := matmulShapes("MatmulOut", a, b)
	checkOut("MatmulOut", out, shape, a, b)
	// The product would read what it writes. PyTorch's mm(out=) does not
	// check, and computes a wrong product (Note [Memory overlap of writes]);
	// gpukit refuses as at::assert_no_overlap does, so out may still be
	// another view of an operand's storage.
	checkNoOverlap("MatmulOut", out, a, "a")
	checkNoOverlap("MatmulOut", out, b, "b")
	if err := matmulInto(out, a, b, batch); err != nil {
		panicAlloc(err)
	}
	out.bump()
	return out
}
