package kernels

import (
	"fmt"

	"github.com/gpumem/course/gpukit/ops"
)

// Index is the element type of a class-index array (PyTorch's int64
// targets, or int32).
type Index interface{ ~int32 | ~int64 }

// CrossEntropyBackwardRows writes the gradient of a mean cross-entropy with
// respect to its logits, from the log-softmax logProbs of rows rows of n
// classes and each row's target class: for row i and class j,
//
//	probs[i, j] = e^logProbs[i, j] − [j = targets[i]]
//	grad[i, j]  = probs[i, j]·scale
//
// where scale is the loss's gradient over the number of rows. probs is the
// softmax minus the one-hot targets, the gradient before the scale; the
// caller keeps it as the intermediate its memory accounting counts.
//
// The bits are those of the three passes it replaces: Unary(Exp) into
// probs, −1 added at each target, BinaryScalar(Mul, scale) into grad
// (TestCrossEntropyBackwardRowsMatchesPasses). Fused, it reads logProbs once and writes probs and grad once,
// where the passes read logProbs, wrote probs, read it back and wrote
// grad (and the ScatterAdd's miss per row): the arrays are computed a
// chunk at a time in a buffer in the cache, and a large grad is written
// with non-temporal stores (as Binary's, streamFloats). A target outside
// [0, n) panics before anything is written. No output may overlap
// logProbs.
func CrossEntropyBackwardRows[T Float, I Index](grad, probs, logProbs []T, targets []I, scale T, rows, n int) {
	checkRows("CrossEntropyBackwardRows", min(len(grad), len(probs)), len(logProbs), rows, n)
	if len(targets) < rows {
		panic(fmt.Sprintf("kernels: CrossEntropyBackwardRows: %d targets for %d rows", len(targets), rows))
	}
	for i, t := range targets[:rows] {
		if t < 0 || int64(t) >= int64(n) {
			panic(fmt.Sprintf("kernels: CrossEntropyBackwardRows: target %d of row %d is out of bounds for %d classes", t, i, n))
		}
	}
	if rows*n == 0 {
		return
	}
	total := rows * n
	stream := total >= streamFloats
	exp := unaryImplOf(ops.Exp)
	// The arrays are cut into chunks without regard to rows, as Binary
	// cuts them: a row of 1000 float32s ends in the middle of a cache
	// line, and a chunk that ended there would write half a line with
	// streaming stores and the rest with ordinary ones (twice the time).
	parallelFor(total, workers(total, unaryMinPer(ops.Exp)), 16, func(lo, hi int) {
		var buf [crossEntropyChunk]T
		for at := lo; at < hi; {
			end := min(hi, (at/crossEntropyChunk+1)*crossEntropyChunk)
			b := buf[:end-at]
			unaryContig(exp, b, logProbs[at:end])
			for r := at / n; r*n < end; r++ {
				if j := r*n + int(targets[r]); j >= at && j < end {
					b[j-at] += -1 // as the passes' ScatterAdd of −1
				}
			}
			// Only grad streams: with probs streamed too the backward
			// of bench-torch's shape took 2.9 ms, with probs written
			// through the cache 2.2–2.4 ms (2 cores, AVX-512;
			// BenchmarkCrossEntropyBackward).
			copy(probs[at:end], b)
			binaryVSStream(ops.Mul, grad[at:end], b, scale, stream)
			at = end
		}
	})
}

// crossEntropyChunk is how many elements CrossEntropyBackwardRows computes
// at a time (chunks start at its multiples): 4 or 8 KiB, a whole number of
// cache lines, read twice from the first-level cache.
const crossEntropyChunk = 1024
