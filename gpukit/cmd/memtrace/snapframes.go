package main

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/big"
	"slices"

	"github.com/gpumem/course/gpukit/alloc/snapshot"
	"github.com/gpumem/course/gpukit/internal/pickle"
)

// Frames and stacks of the events readSnapshot reads (snapread.go): each
// distinct frame is made once, and each distinct list of frames, so that
// an event's frames are a slice of one shared array. They are checked as
// snapshot's eventOf checks them (gpukit/alloc/snapshot/model.go), with its
// messages: fields and kind are its own, for its frames and events.

// frame is a frame dict, read: one per distinct frame.
type frame struct {
	snapshot.Frame
	id  uint64 // 0: not shared (over the budget)
	err error  // why the dict is not a frame
}

// stack is a frames list, read: one per distinct list of frames.
type stack struct {
	ids    []uint64
	frames []snapshot.Frame // the first maxFrames; nil for none
	err    error            // "frames[i]: ..." of the first that is not a frame
	lost   bool             // over the budget: the frames were not kept
	index  uint32           // in snapReader.stackList
}

// noStack is every empty one, lostStack every one over the budget.
var (
	noStack   = &stack{index: 0}
	lostStack = &stack{lost: true, index: 1}
)

// frameAcc collects the frames of a list as they are stored.
type frameAcc struct {
	n      int
	frames []*frame // the first maxFrames
	err    error
}

func (rd *snapReader) newAcc() *frameAcc {
	if n := len(rd.pool); n > 0 {
		a := rd.pool[n-1]
		rd.pool = rd.pool[:n-1]
		return a
	}
	return &frameAcc{frames: make([]*frame, 0, maxFrames)}
}

// addFrame adds item a.n of a frames list and returns what the memo holds
// in the item's place: its frame.
func (rd *snapReader) addFrame(a *frameAcc, v any) any {
	j := a.n
	a.n++
	if j >= maxFrames {
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

// frameOf reads a frame dict as snapshot's eventOf does.
func (rd *snapReader) frameOf(v any) *frame {
	switch x := v.(type) {
	case *frame:
		return x
	case *pickle.Map:
		f := fields{m: x}
		fr := snapshot.Frame{Filename: f.str(keyFilename, false), Line: f.int(keyLine, false, 0), Name: f.str(keyName, false)}
		if f.err != nil {
			return &frame{err: f.err}
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
	return &frame{err: fmt.Errorf("a %s, not a dict", kind(v))}
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

// fields reads the keys of one dict, each with the check its kind needs,
// as snapshot's fields does (model.go), with its messages.
type fields struct {
	m   *pickle.Map
	err error
}

// The keys of events and frames, made interface values once (a string
// made one on each call would be allocated on each call).
var (
	keyAction, keyAddr, keySize, keyStream, keyFrames any = "action", "addr", "size", "stream", "frames"
	keyFilename, keyLine, keyName                     any = "filename", "line", "name"
)

// int reads a non-negative integer below 2⁶³; optional keys give def.
func (f *fields) int(key any, required bool, def int64) int64 {
	if f.err != nil {
		return 0
	}
	v, ok := f.m.Get(key)
	if !ok {
		if required {
			f.err = fmt.Errorf("no %q", key)
		}
		return def
	}
	switch x := v.(type) {
	case int64:
		if x < 0 {
			f.err = fmt.Errorf("%q is %d, below 0", key, x)
			return 0
		}
		return x
	case bool:
		f.err = fmt.Errorf("%q is a bool, not an int", key)
	case *big.Int:
		f.err = fmt.Errorf("%q is %s, beyond 2^63", key, x)
	default:
		f.err = fmt.Errorf("%q is a %s, not an int", key, kind(v))
	}
	return 0
}

func (f *fields) str(key any, required bool) string {
	if f.err != nil {
		return ""
	}
	v, ok := f.m.Get(key)
	if !ok {
		if required {
			f.err = fmt.Errorf("no %q", key)
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		f.err = fmt.Errorf("%q is a %s, not a str", key, kind(v))
	}
	return s
}

// kind names v's Python type as snapshot's messages do; a frame or stack
// the reader made in place of a dict or list is still one.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case bool:
		return "bool"
	case int64, *big.Int:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []byte:
		return "bytes"
	case *pickle.List, *stack:
		return "list"
	case pickle.Tuple:
		return "tuple"
	case *pickle.Map, *frame:
		return "dict"
	case *pickle.Set:
		return "set"
	}
	return fmt.Sprintf("%T", v)
}
