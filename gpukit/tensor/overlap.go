package tensor

import "slices"

// Note [Memory overlap of writes]
//
// An op that writes into a tensor the caller gave (in place, or out=)
// refuses the layouts PyTorch 2.6 refuses, with the rules of
// aten/src/ATen/MemoryOverlap.cpp, and accepts everything else:
//
//   - The written-to tensor must not overlap itself: has_internal_overlap
//     is Yes when the tensor is not non-overlapping-and-dense and has a
//     dimension of size > 1 with stride 0 (an Expand). A tensor that is
//     not dense but has no stride 0 is TooHard, and accepted.
//   - An input must not partially overlap it: get_overlap_status is Full
//     for the same tensor; No when either is empty; TooHard when either is
//     not non-overlapping-and-dense (a slice with a step), which is
//     accepted without looking further; otherwise, on the same storage,
//     Full when both cover the same bytes with the same strides, Partial
//     when they cover the same bytes with other strides (x.T() into x) or
//     when their byte ranges intersect, No when they do not.
//
// TensorIteratorBase::compute_mem_overlaps (aten/src/ATen/TensorIterator.cpp)
// applies both to every in-place and out= op built on TensorIterator
// (add_, sub_, mul_, div_, relu_, clamp_, copy_, add(out=) ...), skipping
// an input that is the output itself (is_same), and compares the operands
// as given, before broadcasting. Other ops state their rule: index_select
// (out=) calls at::assert_no_overlap, which refuses Full overlap too;
// fill_ checks nothing ("Fill is idempotent, so overlap is okay",
// aten/src/ATen/native/Fill.cpp); copy_ returns before its TensorIterator
// when src is self or the same view of the same data
// (aten/src/ATen/native/Copy.cpp). PyTorch's mm(out=) checks nothing and
// computes a wrong product when out is an operand (pytorch/pytorch#85852,
// #114350); gpukit's MatmulOut refuses that, with assert_no_overlap's rule.
//
// The checks read shapes and strides only: no allocation, no element.

// internalOverlap is PyTorch's MemOverlap: whether a tensor's elements
// overlap each other.
type internalOverlap int

const (
	internalNo      internalOverlap = iota // no two elements share memory
	internalYes                            // a dimension of size > 1 has stride 0
	internalTooHard                        // not dense, no stride 0: not looked into
)

// overlapStatus is PyTorch's MemOverlapStatus: how two tensors' elements
// overlap.
type overlapStatus int

const (
	overlapNo      overlapStatus = iota // no element in common (or one is empty)
	overlapFull                         // the same elements in the same order
	overlapPartial                      // some elements in common, or the same ones in another order
	overlapTooHard                      // one is not dense: not looked into
)

// nonOverlappingAndDense reports whether the elements of a tensor of the
// given shape and strides fill a block of memory once each, in some order
// of its dimensions: c10's is_non_overlapping_and_dense
// (_compute_non_overlapping_and_dense in c10/core/Contiguity.h, true
// for an empty tensor as is_contiguous is). PyTorch sorts the dimensions
// of size ≥ 2 by stride and requires strides 1, size₀, size₀·size₁, ...;
// here each required stride must belong to exactly one such dimension,
// which is the same test without a sorted copy.
func nonOverlappingAndDense(shape, strides []int) bool {
	dims := 0 // dimensions of size ≥ 2; size 0 means no element at all
	for _, n := range shape {
		if n == 0 {
			return true
		}
		if n >= 2 {
			dims++
		}
	}
	want := 1
	for range dims {
		found := -1
		for i, n := range shape {
			if n >= 2 && strides[i] == want {
				if found >= 0 {
					return false // two dimensions step over the same elements
				}
				found = i
			}
		}
		if found < 0 {
			return false
		}
		want *= shape[found]
	}
	return true
}

// hasInternalOverlap is PyTorch's has_internal_overlap.
func hasInternalOverlap(t *Tensor) internalOverlap {
	if nonOverlappingAndDense(t.shape, t.strides) {
		return internalNo
	}
	for i, s := range t.strides {
		if s == 0 && t.shape[i] > 1 {
			return internalYes
		}
	}
	return internalTooHard
}

// getOverlapStatus is PyTorch's get_overlap_status, step by step. Storage
// identity stands for the same memory, as there (is_alias_of): a gpukit
// Storage is exactly one block.
func getOverlapStatus(a, b *Tensor) overlapStatus {
	if a == b {
		return overlapFull
	}
	if a.Numel() == 0 || b.Numel() == 0 {
		return overlapNo
	}
	if !nonOverlappingAndDense(a.shape, a.strides) || !nonOverlappingAndDense(b.shape, b.strides) {
		return overlapTooHard
	}
	if a.st != b.st {
		return overlapNo
	}
	aBegin, bBegin := a.offset*a.dtype.Size(), b.offset*b.dtype.Size()
	aEnd, bEnd := aBegin+a.Numel()*a.dtype.Size(), bBegin+b.Numel()*b.dtype.Size()
	if aBegin == bBegin && aEnd == bEnd {
		if slices.Equal(a.strides, b.strides) {
			return overlapFull
		}
		return overlapPartial
	}
	if aBegin < bEnd && bBegin < aEnd {
		return overlapPartial
	}
	return overlapNo
}

// checkNoInternalOverlap is PyTorch's assert_no_internal_overlap: it
// refuses to write into t when t is an expanded tensor (see Note [Memory
// overlap of writes]).
func checkNoInternalOverlap(op string, t *Tensor) {
	if hasInternalOverlap(t) == internalYes {
		panicf("%s: unsupported operation: more than one element of the written-to tensor (shape %s, stride %s) refers to a single memory location; Clone it first", op, fmtShape(t.shape), fmtShape(t.strides))
	}
}

// checkNoPartialOverlap is TensorIterator's check of input in (named name
// in the message) against the written-to tensor out: at::
// assert_no_partial_overlap, skipped when in is out (see Note [Memory
// overlap of writes]).
func checkNoPartialOverlap(op string, out, in *Tensor, name string) {
	if in != out && getOverlapStatus(out, in) == overlapPartial {
		panicOverlap(op, out, in, name)
	}
}

// checkNoOverlap is PyTorch's assert_no_overlap: in must share no element
// with out, not even all of them (see Note [Memory overlap of writes]).
func checkNoOverlap(op string, out, in *Tensor, name string) {
	if s := getOverlapStatus(out, in); s == overlapPartial || s == overlapFull {
		panicOverlap(op, out, in, name)
	}
}

func panicOverlap(op string, out, in *Tensor, name string) {
	panicf("%s: unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location (the written-to tensor, shape %s stride %s offset %d, shares storage with %s, shape %s stride %s offset %d); Clone %s first",
		op, fmtShape(out.shape), fmtShape(out.strides), out.offset, name, fmtShape(in.shape), fmtShape(in.strides), in.offset, name)
}

// sameView reports whether a and b are the same view of the same data:
// copy_'s is_same_data (aten/src/ATen/native/Copy.cpp).
func sameView(a, b *Tensor) bool {
	return a.st == b.st && a.offset == b.offset && a.dtype == b.dtype &&
		slices.Equal(a.shape, b.shape) && slices.Equal(a.strides, b.strides)
}
