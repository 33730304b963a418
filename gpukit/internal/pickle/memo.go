package pickle

import (
	"fmt"
	"reflect"
)

// The memo. Python's pickler memoizes every dict, list, tuple and str it
// writes (MEMOIZE, or PUT before protocol 4) and writes a later reference
// to the same object as GET: a memory snapshot of a million events has
// millions of memo entries. Slots hold four-byte handles into a table of
// values, in which equal strings, and the replacements a StoreFunc makes,
// are one entry however many slots hold them; a list, dict or set the
// StoreFunc replaces or drops gives its entry back. So the memo costs four
// bytes a slot, plus the values still in it.
type memo struct {
	dense  []uint32         // slots 0, 1, 2... as MEMOIZE and Python's PUTs fill them
	sparse map[int64]uint32 // slots set out of order (PUT 7 before PUT 6)
	vals   []any            // handle -> value
	refs   []uint32         // handle -> slots holding it
	free   []uint32         // handles to reuse
	shared map[any]uint32   // value -> handle, for values that are one entry
}

// Handles 0 and 1: an empty slot, and the slot of a value a StoreFunc
// dropped (Forget).
const (
	noValue uint32 = iota
	forgotten
)

func (m *memo) init() {
	m.vals = []any{nil, nil}
	m.refs = []uint32{0, 0}
	m.shared = map[any]uint32{}
}

// count is the number of slots, as Python's len(memo).
func (m *memo) count() int64 { return int64(len(m.dense) + len(m.sparse)) }

func (m *memo) slot(idx int64) uint32 {
	if idx >= 0 && idx < int64(len(m.dense)) {
		return m.dense[idx]
	}
	return m.sparse[idx]
}

func (m *memo) get(idx int64) (any, error) {
	switch h := m.slot(idx); h {
	case noValue:
		return nil, fmt.Errorf("pickle: the memo has no entry %d", idx)
	case forgotten:
		return nil, fmt.Errorf("pickle: the memo entry %d is a value the reader left out (a value written once and referred to again where the reader does not expect it)", idx)
	default:
		return m.vals[h], nil
	}
}

// set puts v in slot idx, and says whether the slot changed.
func (m *memo) set(idx int64, v any) bool {
	if h := m.slot(idx); h > forgotten && isContainer(v) && m.vals[h] == v {
		return false // already there
	}
	m.setHandle(idx, m.handle(v))
	return true
}

// handle returns the entry of v: the shared one of an equal string or of
// the same replacement, else a new one.
func (m *memo) handle(v any) uint32 {
	if v == Forget {
		return forgotten
	}
	key, shared := sharedKey(v)
	if shared {
		if h, ok := m.shared[key]; ok {
			return h
		}
	}
	var h uint32
	if n := len(m.free); n > 0 {
		h = m.free[n-1]
		m.free = m.free[:n-1]
		m.vals[h] = v
	} else {
		h = uint32(len(m.vals))
		m.vals = append(m.vals, v)
		m.refs = append(m.refs, 0)
	}
	if shared {
		m.shared[key] = h
	}
	return h
}

// sharedKey says whether v is one entry however many slots hold it:
// strings, and pointers other than the decoder's containers (the
// replacements of a StoreFunc, *big.Int). A container has an entry per
// slot, which it gives back when a StoreFunc replaces it.
func sharedKey(v any) (any, bool) {
	switch v.(type) {
	case string:
		return v, true
	case *List, *Map, *Set, nil:
		return nil, false
	}
	if reflect.TypeOf(v).Kind() == reflect.Pointer {
		return v, true
	}
	return nil, false
}

func isContainer(v any) bool {
	switch v.(type) {
	case *List, *Map, *Set:
		return true
	}
	return false
}

func (m *memo) setHandle(idx int64, h uint32) {
	old := m.slot(idx)
	switch {
	case idx >= 0 && idx < int64(len(m.dense)):
		m.dense[idx] = h
	case idx == int64(len(m.dense)):
		m.dense = append(m.dense, h)
		if m.sparse != nil {
			delete(m.sparse, idx)
		}
	default:
		if m.sparse == nil {
			m.sparse = map[int64]uint32{}
		}
		m.sparse[idx] = h
	}
	if h > forgotten {
		m.refs[h]++
	}
	m.release(old)
}

// release drops a slot's hold on handle h, and frees h with the last one.
func (m *memo) release(h uint32) {
	if h <= forgotten {
		return
	}
	m.refs[h]--
	if m.refs[h] > 0 {
		return
	}
	if key, shared := sharedKey(m.vals[h]); shared {
		delete(m.shared, key)
	}
	m.vals[h] = nil
	m.free = append(m.free, h)
}

// replace puts nv in slot idx if it holds old (a container the StoreFunc
// replaced or dropped).
func (m *memo) replace(idx int64, old, nv any) {
	if h := m.slot(idx); h > forgotten && m.vals[h] == old {
		m.setHandle(idx, m.handle(nv))
	}
}
