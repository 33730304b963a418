package main

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/gpumem/course/gpukit/alloc/snapshot"
	"github.com/gpumem/course/gpukit/internal/pickle"
)

// Frames and stacks of the events readSnapshot reads (snapread.go): each
// distinct frame is made once, and each distinct list of frames, so that
// an event's frames are a slice of one shared array. snapshot.FrameOf
// checks them, as snapshot.Read does.

// frame is a frame dict, read: one per distinct frame.
type frame struct {
	snapshot.Frame
	id  uint64 // 0: not shared (over the budget)
	err error  // why the dict is not a frame
}

// stack is a frames list, read: one per distinct list of frames.
type stack struct {
	ids    []uint64
	frames []snapshot.Frame // the first snapshot.MaxFrames; nil for none
	err    error            // "frames[i]: ..." of the first that is not a frame
	lost   bool             // over the budget: the frames were not kept
	index  uint32           // in snapReader.stackList
}

// A frame or stack the reader made in place of a dict or list is still
// one in the messages (pickle.TypeName).
func (*frame) TypeName() string { return "dict" }
func (*stack) TypeName() string { return "list" }

// noStack is every empty one, lostStack every one over the budget.
var (
	noStack   = &stack{index: 0}
	lostStack = &stack{lost: true, index: 1}
)

// frameAcc collects the frames of a list as they are stored.
type frameAcc struct {
	n      int
	frames []*frame // the first snapshot.MaxFrames
	err    error
}

func (rd *snapReader) newAcc() *frameAcc {
	if n := len(rd.pool); n > 0 {
		a := rd.pool[n-1]
		rd.pool = rd.pool[:n-1]
		return a
	}
	return &frameAcc{frames: make([]*frame, 0, snapshot.MaxFrames)}
}

// addFrame adds item a.n of a frames list and returns what the memo holds
// in the item's place: its frame.
func (rd *snapReader) addFrame(a *frameAcc, v any) any {
	j := a.n
	a.n++
	if j >= snapshot.MaxFrames {
		return v
	}
	f := rd.frameOf(v)
	if f.err != nil && a.err == nil {
		a.err = fmt.Errorf("frames[%d]: %w", j, f.err)
	}
	a.frames = append(a.frames, f)
	if _, ok := v.(*pickle.Map); ok {
		return f
	}
	return v
}

// frameOf reads a frame dict with snapshot.FrameOf.
func (rd *snapReader) frameOf(v any) *frame {
	if x, ok := v.(*frame); ok {
		return x
	}
	fr, err := snapshot.FrameOf(v)
	if err != nil {
		return &frame{err: err}
	}
	if s := rd.frames[fr]; s != nil {
		return s
	}
	cost := int64(128 + len(fr.Filename) + len(fr.Name))
	if rd.want == nil && rd.kept+cost > framesBudget {
		return &frame{Frame: fr}
	}
	rd.kept += cost
	rd.nextID++
	s := &frame{Frame: fr, id: rd.nextID}
	rd.frames[fr] = s
	return s
}

// stackOf is the stack of a frames list: from its frameAcc when its items
// streamed by, else from its items.
func (rd *snapReader) stackOf(l *pickle.List) *stack {
	a := rd.accs[l]
	if a != nil {
		delete(rd.accs, l)
		if rd.last.list == l {
			rd.last = lastList{}
		}
	} else {
		a = rd.newAcc()
		for _, fv := range l.Items {
			rd.addFrame(a, fv)
		}
	}
	s := rd.finish(a)
	a.n, a.frames, a.err = 0, a.frames[:0], nil
	rd.pool = append(rd.pool, a)
	return s
}

// finish interns the stack of a: one *stack per distinct list of frames.
func (rd *snapReader) finish(a *frameAcc) *stack {
	if a.err != nil {
		return &stack{err: a.err}
	}
	if len(a.frames) == 0 {
		return noStack
	}
	rd.idBuf = rd.idBuf[:0]
	for _, f := range a.frames {
		if f.id == 0 {
			return lostStack
		}
		rd.idBuf = binary.LittleEndian.AppendUint64(rd.idBuf, f.id)
	}
	h := maphash.Bytes(rd.seed, rd.idBuf)
	for _, s := range rd.stacks[h] {
		if len(s.ids) == len(a.frames) && slices.EqualFunc(s.ids, a.frames, func(id uint64, f *frame) bool { return id == f.id }) {
			return s
		}
	}
	cost := int64(96 + 48*len(a.frames))
	if rd.want == nil && rd.kept+cost > framesBudget {
		return lostStack
	}
	rd.kept += cost
	s := &stack{ids: make([]uint64, len(a.frames)), frames: make([]snapshot.Frame, len(a.frames)), index: uint32(len(rd.stackList))}
	for i, f := range a.frames {
		s.ids[i], s.frames[i] = f.id, f.Frame
	}
	rd.stacks[h] = append(rd.stacks[h], s)
	rd.stackList = append(rd.stackList, s)
	return s
}
