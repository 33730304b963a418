package pickle

import (
	"errors"
	"slices"
)

// Reading a large pickle with memory for what is kept. DecodeStore calls a
// StoreFunc for each value the pickle stores into a list, a dict or a set
// (APPEND, APPENDS, SETITEM, SETITEMS, ADDITEMS, and the items of LIST,
// DICT and FROZENSET; a tuple's items are part of the tuple), with where
// it goes. The StoreFunc answers what to store in its place: the value
// itself, something smaller it made of it, or nothing. A memory snapshot's
// reader turns each trace event into its own record as the event's dict
// is stored and keeps nothing of the dict, and each frames list into a
// shared stack, so that a file of a gigabyte is read in the memory of its
// events.
//
// Where a value goes is its Path from the pickle's top-level value: the
// dict keys and list positions down to its container, then its own Step.
// The stack tells it before the container is stored anywhere, because
// Python's pickler (and gpukit's encoder) write each list or dict empty,
// fill it, and only then store it into the container below it on the
// stack: the key or position it will take is already there. A pickle
// written otherwise (protocol 0's MARK ... LIST builds a list before the
// one it goes into exists) leaves some paths unknown: Item.Known is false,
// and a StoreFunc should then store the value as it is, so that its
// caller finds it in the decoded value.
//
// What the StoreFunc puts in a value's place also takes the value's place
// in the memo, when the value is a list, dict or set that the memo holds,
// so that a later GET gets what the StoreFunc made (PyTorch's pickles refer
// back to one frames list and one frame dict many times). Forget leaves a
// value out of the memo as well: a later GET of it is an error. The decoder
// does not look further for the value: a DUP of it, or a GET of a list or
// dict before it was stored (which only a value that contains itself
// needs), still gets the value itself. The pickles Python's pickler writes
// of acyclic data have neither.

// A StoreFunc decides what is stored for one item: v in its place (the
// item's Value, or a replacement) when store is true, nothing when false;
// an error stops the decoding. A list's items keep their positions when
// some are left out: Step.Index counts them.
type StoreFunc func(it *Item) (v any, store bool, err error)

// Item is one value on its way into a container. The decoder reuses the
// Item and its Path for the next value: a StoreFunc keeps neither.
type Item struct {
	Container any    // the *List, *Map or *Set the value goes into
	Path      []Step // where Container is under the top-level value (empty: it is the top-level value)
	Known     bool   // whether the stack tells Path; false: Path is nil
	Step      Step   // where the value goes in Container
	Value     any
}

// Step is one step down from a container: a dict's key, or a position in
// a list or a set.
type Step struct {
	Key   any   // in a dict
	Index int64 // in a list or a set; -1 in a dict
}

// Forget, as a StoreFunc's v, stores nothing and leaves the value out of
// the memo: a later GET of it is an error.
var Forget any = forget{}

type forget struct{}

// place is where a value on the stack will be stored, worked out as it is
// pushed (only with a StoreFunc): Python's pickler writes a dict or list
// empty, then either a MARK, its items and APPENDS or SETITEMS (a batch),
// or one item and APPEND or SETITEM; it stores each container into the one
// below it only once it is filled. So a value pushed right after a MARK is
// the first item (or key) of the batch of the container below the MARK; a
// value after a dict's key is that key's value; a value after an item of a
// batch is the batch's next item (or key) — unless it cannot be a key (a
// list or dict after a value in a dict's batch), or the container has no
// batch open: then it is the one item of the value before it. Items of a
// list that are themselves lists with one item are the case this misreads
// (the one item looks like the next item of the outer list): the path is
// then wrong by a level, never longer than the value's own.
type place struct {
	index  int64 // placeItem: the position (placeValue: the key is the value below it)
	parent int32 // stack height of the container the value goes into
	batch  int32 // MARKs open over this value (it is a container receiving a batch)
	depth  int32 // the length of its path
	kind   uint8 // placeRoot, placeKey, placeValue, placeItem, placeUnknown
}

// maxPathDepth bounds paths: a value nested deeper has none (Known is
// false), so that a pickle of a million nested lists costs no more with a
// StoreFunc than without.
const maxPathDepth = 64

const (
	placeUnknown uint8 = iota
	placeRoot          // the top-level value
	placeKey           // a key of the dict at parent
	placeValue         // the value, in the dict at parent, of the key below it on the stack
	placeItem          // item index of the list or set at parent
)

// placeOf is the place of a value pushed at stack height q.
func (d *decoder) placeOf(q int, v any) place {
	n := len(d.marks)
	if q == 0 {
		if n > 0 {
			return place{} // an item of a container not made yet (protocol 0)
		}
		return place{kind: placeRoot}
	}
	e := q - 1
	if n > 0 && d.marks[n-1] == q {
		// The first value of a batch; two MARKs at one height are
		// protocol 0's, building a container not made yet.
		if n > 1 && d.marks[n-2] == q {
			return place{}
		}
		return d.into(e, v)
	}
	pe := d.places[e]
	switch pe.kind {
	case placeKey:
		return place{parent: pe.parent, kind: placeValue, depth: d.places[pe.parent].depth + 1}
	case placeValue, placeItem:
		if d.places[pe.parent].batch > 0 {
			switch d.stack[pe.parent].(type) {
			case *Map:
				if _, ok := hashKey(v); ok {
					return place{parent: pe.parent, kind: placeKey}
				}
			case *List, *Set:
				return place{parent: pe.parent, kind: placeItem, index: pe.index + 1, depth: pe.depth}
			}
		}
		// The container below has its one item: v goes into that item.
		return d.into(e, v)
	case placeRoot:
		return d.into(e, v)
	}
	return place{}
}

// into is the place of v as the first value stored into the container at
// stack height e.
func (d *decoder) into(e int, v any) place {
	depth := d.places[e].depth + 1
	if d.places[e].kind == placeUnknown || depth > maxPathDepth {
		return place{}
	}
	switch c := d.stack[e].(type) {
	case *Map:
		if _, ok := hashKey(v); ok {
			return place{parent: int32(e), kind: placeKey}
		}
	case *List:
		return place{parent: int32(e), kind: placeItem, index: int64(len(c.Items)) + d.dropped[c], depth: depth}
	case *Set:
		return place{parent: int32(e), kind: placeItem, index: int64(len(c.Items)) + d.dropped[c], depth: depth}
	}
	return place{}
}

// pathAt writes to d.path the path of a value at stack height q whose
// place is pl (pl is d.places[q], or the place a new value would take
// there) and returns its length, or -1 when unknown.
func (d *decoder) pathAt(q int, pl place) int {
	d.path = d.path[:0]
	for {
		switch pl.kind {
		case placeRoot:
			slices.Reverse(d.path)
			return len(d.path)
		case placeValue:
			d.path = append(d.path, Step{Key: d.stack[q-1], Index: -1})
		case placeItem:
			d.path = append(d.path, Step{Index: pl.index})
		default:
			return -1
		}
		q = int(pl.parent)
		pl = d.places[q]
	}
}

// depthOf is the path length of the container at stack height q, its path
// in d.path; -1 when unknown or without a StoreFunc.
func (d *decoder) depthOf(q int) int {
	if d.store == nil || q < 0 {
		return -1
	}
	return d.pathAt(q, d.places[q])
}

// begin fills d.item for a value going into c at step, c's path being
// d.path[:depth].
func (d *decoder) begin(c any, depth int, step Step) {
	d.item.Container, d.item.Step = c, step
	if depth >= 0 {
		d.item.Path, d.item.Known = d.path[:depth], true
	} else {
		d.item.Path, d.item.Known = nil, false
	}
}

// call asks the StoreFunc about v (d.item filled by begin).
func (d *decoder) call(v any) (any, bool, error) {
	d.item.Value = v
	nv, keep, err := d.store(&d.item)
	d.item.Value, d.item.Container = nil, nil
	if err != nil {
		return nil, false, err
	}
	if nv == Forget {
		keep = false
	}
	if isContainer(v) && nv != v {
		d.replaced(v, nv)
	}
	return nv, keep, nil
}

// storeList and storeSet store items into a list or a set.
func (d *decoder) storeList(l *List, depth int, items []any) error {
	return d.storeItems(l, &l.Items, depth, items)
}

func (d *decoder) storeSet(s *Set, depth int, items []any) error {
	return d.storeItems(s, &s.Items, depth, items)
}

// storeItems stores items into c, whose items are *dst.
func (d *decoder) storeItems(c any, dst *[]any, depth int, items []any) error {
	if d.store == nil {
		*dst = append(*dst, items...)
		return nil
	}
	base, left := int64(len(*dst))+d.dropped[c], int64(0)
	for i, v := range items {
		d.begin(c, depth, Step{Index: base + int64(i)})
		nv, keep, err := d.call(v)
		if err != nil {
			return err
		}
		if keep {
			*dst = append(*dst, nv)
		} else {
			left++
		}
	}
	d.noteDropped(c, left)
	return nil
}

// storeMap stores key and value pairs.
func (d *decoder) storeMap(m *Map, depth int, items []any) error {
	if len(items)%2 != 0 {
		return errors.New("pickle: a dict's items are not key and value pairs")
	}
	if m.Keys == nil && len(items) > 2 {
		m.Keys, m.Values = make([]any, 0, len(items)/2), make([]any, 0, len(items)/2)
	}
	for i := 0; i < len(items); i += 2 {
		k, v := items[i], items[i+1]
		if d.store != nil {
			if _, ok := hashKey(k); !ok {
				return m.set(k, v) // the error an unhashable key gives
			}
			d.begin(m, depth, Step{Key: k, Index: -1})
			nv, keep, err := d.call(v)
			if err != nil {
				return err
			}
			if !keep {
				continue
			}
			v = nv
		}
		if err := m.set(k, v); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) noteDropped(c any, n int64) {
	if n == 0 {
		return
	}
	if d.dropped == nil {
		d.dropped = map[any]int64{}
	}
	d.dropped[c] += n
}

// memoize puts v in memo slot idx, and with a StoreFunc remembers the slots
// of a list, dict or set, for replaced.
func (d *decoder) memoize(idx int64, v any) {
	if !d.memo.set(idx, v) || d.store == nil || !isContainer(v) {
		return
	}
	if d.memoOf == nil {
		d.memoOf, d.memoMore = map[any]int64{}, map[any][]int64{}
	}
	if _, ok := d.memoOf[v]; !ok {
		d.memoOf[v] = idx
	} else {
		d.memoMore[v] = append(d.memoMore[v], idx)
	}
}

// replaced puts nv where the memo holds old, a container the StoreFunc
// replaced or dropped.
func (d *decoder) replaced(old, nv any) {
	delete(d.dropped, old)
	idx, ok := d.memoOf[old]
	if !ok {
		return
	}
	d.memo.replace(idx, old, nv)
	for _, i := range d.memoMore[old] {
		d.memo.replace(i, old, nv)
	}
	delete(d.memoOf, old)
	delete(d.memoMore, old)
}
