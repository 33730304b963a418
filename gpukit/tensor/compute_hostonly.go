package tensor

// The host-only kernels: computations that no Compute method expresses
// (LayerNorm of 16-bit inputs with float32 parameters). They run on the bytes of sim and host
// tensors, do nothing on meta tensors (no values, the op still charges
// its cost), and on a device whose memory the host cannot read (cuda)
// hostOnly refuses them with the package's error naming the op and the
// way out. Index checks read the indices through hostBytes, which copies
// them from such a device, and dropout's mask is drawn on the host and
// written through writeValues.

// hostOnlyKernels lists them for the error message.
const hostOnlyKernels = "LayerNorm of 16-bit input with float32 parameters"

// hostOnly reports whether a host-only kernel can run on the tensors
// (all of them have bytes the host reaches). It returns false for meta
// tensors and empty tensors, and panics for tensors on a device that
// computes on its own memory.
func hostOnly(op string, ts ...*Tensor) bool {
	for _, t := range ts {
		if t != nil && t.st.data == nil {
			if t.deviceOnly() && t.Numel() > 0 {
				panicf("%s: this kernel runs only where the host reads the memory (%s); %s has no version of it yet: move the tensors to sim with To(\"sim:0\") for this op", op, hostOnlyKernels, t.DeviceName())
			}
			return false
		}
	}
	return true
}

// bernoulliKernel fills the fresh Bool mask with 1 where a uniform draw
// from g is ≥ p (keep), 0 elsewhere, one draw per element in order. The
// draws are made on the host (as torch.Generator's CPU stream) and the
// mask reaches a device without host bytes through a host buffer and a
// copy; a meta mask takes no draws.
func bernoulliKernel(mask *Tensor, p float64, g *Generator) {
	if mask.Numel() == 0 {
		return
	}
	writeValues(mask, func(data []byte) {
		g.mu.Lock()
		defer g.mu.Unlock()
		for i := range mask.Numel() {
			data[i] = 0
			if g.rng.Float64() >= p {
				data[i] = 1
			}
		}
	})
}

// indexBytes returns bytes laid out like index's storage that the host
// can read (copied from a cuda device), nil on a meta device.
func indexBytes(op string, index *Tensor) []byte {
	if index.Numel() == 0 || (index.st.data == nil && !index.deviceOnly()) {
		return nil
	}
	return index.hostBytes(op)
}

// indexValues reads a 1-d (or 0-d) index tensor, checking every entry is in
// [0, size). It returns nil on a meta device (no values to read).
func indexValues(op string, index *Tensor, size int) []int {
	out := indexInts(op, index)
	for _, v := range out {
		if v < 0 || v >= size {
			panicf("%s: index %d is out of bounds for dimension with size %d (indices must be in [0, %d))", op, v, size, size)
		}
	}
	return out
}

// indexInts reads an index tensor's entries in order (nil where
// indexBytes has no bytes for it: meta).
func indexInts(op string, index *Tensor) []int {
	data := indexBytes(op, index)
	if data == nil {
		return nil
	}
	out := make([]int, 0, index.Numel())
	forEachOffset(index.shape, []int{index.offset}, [][]int{index.strides}, func(_ int, o []int) {
		out = append(out, int(load(index.dtype, data, o[0])))
	})
	return out
}

// checkIndexRange panics unless every element of index is in [0, size).
func checkIndexRange(op string, index *Tensor, size int) {
	data := indexBytes(op, index)
	if data == nil {
		return
	}
	forEachOffset(index.shape, []int{index.offset}, [][]int{index.strides}, func(_ int, o []int) {
		if v := int(load(index.dtype, data, o[0])); v < 0 || v >= size {
			panicf("%s: index %d is out of bounds for dimension with size %d (indices must be in [0, %d))", op, v, size, size)
		}
	})
}
