package kernels

import (
	"fmt"

	"github.com/gpumem/course/gpukit/layout"
)

// copyTile is the edge of the square tiles used when the source must be read
// across its rows (a transpose). 64×64 float32 is 16 KiB of source plus
// 16 KiB of destination, which fits L1 with room to spare, and each tile
// row touches a whole number of 64-byte cache lines.
const copyTile = 64

// Copy writes the N-d strided view src, of the given shape, into dst as a
// dense row-major array (the "make contiguous" operation). dst must hold at
// least numel(shape) elements and must not overlap src.
//
// Rows that are contiguous in src are moved with the built-in copy. When the
// source's fastest-varying dimension is not the last one (a transpose or a
// permute), the copy is done in cache-blocked 2-d tiles so that both the
// reads and the writes use every byte of each cache line they touch.
// For a strided destination use UnaryStrided with Identity.
func Copy[T Float](shape []int, dst []T, src Strided[T]) {
	checkView("src", shape, src)
	total := numel(shape)
	if len(dst) < total {
		panic(fmt.Sprintf("kernels: Copy: dst length %d < %d elements of shape %v", len(dst), total, shape))
	}
	if total == 0 {
		return
	}
	l := coalesce(shape, layout.ContiguousStrides(shape), src.Strides)
	nd := len(l.shape)
	// t is the non-last dimension along which src moves fastest.
	t := -1
	for d := 0; d < nd-1; d++ {
		if t < 0 || l.st[1][d] < l.st[1][t] {
			t = d
		}
	}
	if t < 0 || l.st[1][nd-1] <= l.st[1][t] {
		// Source rows are (nearly) sequential already: stream them.
		off := [3]int{0, src.Offset}
		parallelFor(total, workers(total, parallelThreshold), 16, func(lo, hi int) {
			l.rows(off, lo, hi, func(n int, o, s [3]int) {
				if s[1] == 1 {
					copy(dst[o[0]:o[0]+n], src.Data[o[1]:o[1]+n])
					return
				}
				d, x := dst[o[0]:o[0]+n], src.Data
				for i := range d {
					d[i] = x[o[1]+i*s[1]]
				}
			})
		})
		return
	}
	copyPlanes(l, t, dst, src)
}

// copyPlanes handles the transposing case: every plane spanned by dimension
// t (rows i) and the last dimension (columns j) is copied tile by tile; all
// remaining dimensions enumerate the planes.
func copyPlanes[T Float](l coalesced, t int, dst []T, src Strided[T]) {
	nd := len(l.shape)
	ni, nj := l.shape[t], l.shape[nd-1]
	dsI, ssI, ssJ := l.st[0][t], l.st[1][t], l.st[1][nd-1]
	// Layout of the remaining ("plane") dimensions.
	var pshape, pd, ps []int
	for d := 0; d < nd-1; d++ {
		if d != t {
			pshape = append(pshape, l.shape[d])
			pd = append(pd, l.st[0][d])
			ps = append(ps, l.st[1][d])
		}
	}
	planes := coalesce(pshape, pd, ps)
	np := numel(pshape)
	w := workers(np*ni*nj, parallelThreshold)
	if np >= w {
		parallelFor(np, w, 1, func(lo, hi int) {
			planes.rows([3]int{0, src.Offset}, lo, hi, func(n int, o, s [3]int) {
				for p := 0; p < n; p++ {
					copyTiles(dst, o[0]+p*s[0], dsI, src.Data, o[1]+p*s[1], ssI, ssJ, 0, ni, nj)
				}
			})
		})
		return
	}
	// Few large planes: split each plane's rows across workers instead.
	planes.rows([3]int{0, src.Offset}, 0, np, func(n int, o, s [3]int) {
		for p := 0; p < n; p++ {
			do, so := o[0]+p*s[0], o[1]+p*s[1]
			parallelFor(ni, w, copyTile, func(lo, hi int) {
				copyTiles(dst, do, dsI, src.Data, so, ssI, ssJ, lo, hi, nj)
			})
		}
	})
}

// copyTiles copies rows [i0,i1) of one plane: dst[do+i·dsI+j] = src[so+i·ssI+j·ssJ],
// visiting the plane in copyTile×copyTile blocks.
func copyTiles[T Float](dst []T, do, dsI int, src []T, so, ssI, ssJ, i0, i1, nj int) {
	for ib := i0; ib < i1; ib += copyTile {
		ie := min(ib+copyTile, i1)
		for jb := 0; jb < nj; jb += copyTile {
			je := min(jb+copyTile, nj)
			if ssI == 1 {
				transposeTile(dst, do, dsI, src, so, ssJ, ib, ie, jb, je)
				continue
			}
			for i := ib; i < ie; i++ {
				d := dst[do+i*dsI+jb : do+i*dsI+je]
				s := so + i*ssI + jb*ssJ
				for j := range d {
					d[j] = src[s+j*ssJ]
				}
			}
		}
	}
}

// microTile is the edge of the register/stack transpose block. 16 float32 is
// one cache line, so each micro block reads 16 whole source lines and writes
// 16 whole destination lines, each in one go. That matters for power-of-two
// strides (e.g. 4096 floats = 16 KiB), where all those lines fall into the
// same few L1 sets: a line touched element by element across a tile would be
// evicted before it was used up.
const microTile = 16

// transposeTile copies the block i∈[ib,ie), j∈[jb,je) of a plane whose source
// is contiguous along i: dst[do+i·dsI+j] = src[so+i+j·ssJ].
func transposeTile[T Float](dst []T, do, dsI int, src []T, so, ssJ, ib, ie, jb, je int) {
	var buf [microTile][microTile]T
	for i := ib; i < ie; i += microTile {
		for j := jb; j < je; j += microTile {
			if i+microTile > ie || j+microTile > je {
				for ii := i; ii < min(i+microTile, ie); ii++ {
					d := dst[do+ii*dsI+j : do+ii*dsI+min(j+microTile, je)]
					for jj := range d {
						d[jj] = src[so+ii+(j+jj)*ssJ]
					}
				}
				continue
			}
			if useAVX2 {
				if d, ok := any(dst).([]float32); ok {
					// Both corner indices were bounds-checked by the slicing
					// below, which covers every element the kernel touches.
					ds := d[do+i*dsI+j : do+(i+microTile-1)*dsI+j+microTile]
					ss := any(src).([]float32)[so+i+j*ssJ : so+i+(j+microTile-1)*ssJ+microTile]
					transpose16x16AVX(&ds[0], dsI, &ss[0], ssJ)
					continue
				}
			}
			// Read 16 source rows (j), 16 contiguous elements (i) each …
			for r := range buf {
				o := so + i + (j+r)*ssJ
				buf[r] = [microTile]T(src[o : o+microTile])
			}
			// … and write them out as 16 destination rows.
			for c := 0; c < microTile; c++ {
				o := do + (i+c)*dsI + j
				d := (*[microTile]T)(dst[o : o+microTile])
				for r := range d {
					d[r] = buf[r][c]
				}
			}
		}
	}
}
