package snapshot

import "github.com/gpumem/course/gpukit/alloc"

// A plan is a device trace cut into what the program asked (steps) and what
// the allocator decided (segment events), which Check compares and WhatIf
// leaves out.
//
// PyTorch's malloc holds the allocator's lock from its first action to its
// last, so the segment events it causes come right before its alloc (or
// oom) event: free_completed of blocks whose streams are done
// (process_events), segment_free or segment_unmap (garbage collection,
// release after a failed cudaMalloc), segment_alloc or segment_map, then
// alloc. Segment events with no request after them, before the next free,
// are an empty_cache() (torch/cuda/memory.py), which the trace does not
// record otherwise. A free_completed that does not follow its
// free_requested at once ends a wait for other streams (record_stream).

type stepKind uint8

const (
	stepAlloc      stepKind = iota // alloc: a request PyTorch served
	stepOOM                        // oom: a request PyTorch refused
	stepFree                       // free_requested
	stepComplete                   // a late free_completed
	stepEmptyCache                 // segment events outside any request
)

type step struct {
	kind stepKind
	late bool // stepFree: its free_completed comes later, or never
	// syncOnly marks a stepComplete right before an oom, or before a
	// request whose segment events start with a release: PyTorch's
	// cudaMalloc failed first, and
	// the free completed when the retry waited for every stream
	// (synchronize_and_free_events), which a failed cudaMalloc leaves no
	// trace of; so the block was not in the cache when malloc looked.
	syncOnly bool
	index    int32 // the event's index in the trace
	g0, g1   int32 // the step's segment events: plan.segs[g0:g1]
}

type plan struct {
	steps []step
	segs  []int32 // indices of segment events, in order
	// emptyFirst marks the requests before which the program called
	// empty_cache(): their segment events start with releases although a
	// cached block fitted, so PyTorch's malloc did not make them. Check
	// finds them (it knows the cache); WhatIf replays them.
	emptyFirst map[int32]bool
}

func buildPlan(tr []Event) *plan {
	p := &plan{steps: make([]step, 0, len(tr)*2/3+1), emptyFirst: map[int32]bool{}}
	g0 := int32(0)
	var held []step // free_completed seen inside a group: they follow its step
	flush := func(kind stepKind, index int) {
		p.steps = append(p.steps, step{kind: kind, index: int32(index), g0: g0, g1: int32(len(p.segs))})
		g0 = int32(len(p.segs))
		p.steps = append(p.steps, held...)
		held = held[:0]
	}
	for i, e := range tr {
		switch e.Action {
		case alloc.ActionSegmentAlloc, alloc.ActionSegmentFree, alloc.ActionSegmentMap, alloc.ActionSegmentUnmap:
			p.segs = append(p.segs, int32(i))
		case alloc.ActionAlloc:
			flush(stepAlloc, i)
		case alloc.ActionOOM:
			flush(stepOOM, i)
		case alloc.ActionFreeRequested:
			if int32(len(p.segs)) > g0 {
				flush(stepEmptyCache, i)
			}
			late := !(i+1 < len(tr) && tr[i+1].Action == alloc.ActionFreeCompleted && tr[i+1].Addr == e.Addr)
			p.steps = append(p.steps, step{kind: stepFree, late: late, index: int32(i), g0: g0, g1: g0})
		case alloc.ActionFreeCompleted:
			if i > 0 && tr[i-1].Action == alloc.ActionFreeRequested && tr[i-1].Addr == e.Addr {
				continue
			}
			s := step{kind: stepComplete, index: int32(i), g0: g0, g1: g0}
			if int32(len(p.segs)) > g0 {
				held = append(held, s)
			} else {
				p.steps = append(p.steps, s)
			}
		}
	}
	if int32(len(p.segs)) > g0 {
		flush(stepEmptyCache, len(tr))
	}
	p.steps = append(p.steps, held...)
	for i, st := range p.steps {
		// An oom always follows release_cached_blocks, which waits for
		// every stream; had the completed blocks been in the cache when
		// malloc looked, one of them could have served the request.
		switch {
		case st.kind == stepOOM:
		case st.kind != stepAlloc || st.g0 == st.g1:
			continue
		default:
			if a := tr[p.segs[st.g0]].Action; a != alloc.ActionSegmentFree && a != alloc.ActionSegmentUnmap {
				continue
			}
		}
		for j := i - 1; j >= 0 && p.steps[j].kind == stepComplete; j-- {
			p.steps[j].syncOnly = true
		}
	}
	return p
}
