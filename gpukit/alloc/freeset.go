package alloc

// freeSet is the ordered set of cached (free) blocks of one pool, ordered by
// (stream, size, address) like PyTorch's BlockComparatorSize. It is a
// two-level B+-tree: a directory of leaves, each a sorted run of at most
// leafMax entries, with the directory holding each leaf's last key. Lookups
// are two binary searches on keys stored inline, so they touch few cache
// lines; inserts and deletes move at most leafMax entries.

const leafMax = 64

type fkey struct {
	stream Stream
	size   int64
	addr   uint64
}

func (a fkey) less(b fkey) bool {
	if a.stream != b.stream {
		return a.stream < b.stream
	}
	if a.size != b.size {
		return a.size < b.size
	}
	return a.addr < b.addr
}

type fentry struct {
	k fkey
	n *node
}

type freeSet struct {
	last   []fkey     // last key of each leaf
	leaves [][]fentry // non-empty, sorted
	n      int
	// spare is the array of the last leaf that emptied or merged away,
	// cleared, for the next leaf the set needs: a pool whose only cached
	// block is taken and given back at every step (a training loop's)
	// would otherwise make a leaf of leafMax+1 entries (2.6 KB) at each
	// step; on 512 meta cards that was a quarter of the bytes a
	// distributed.MeasureMemory allocated.
	spare []fentry
}

// newLeaf returns an empty leaf with room for leafMax+1 entries.
func (s *freeSet) newLeaf() []fentry {
	if leaf := s.spare; leaf != nil {
		s.spare = nil
		return leaf[:0]
	}
	return make([]fentry, 0, leafMax+1)
}

// keepLeaf keeps a leaf the set no longer uses as its spare, cleared so
// that it holds no node. Only its entries need clearing: every leaf's
// array is zero beyond its length (removeAt and the split clear what they
// drop; checkSet checks the spare's whole array).
func (s *freeSet) keepLeaf(leaf []fentry) {
	clear(leaf)
	s.spare = leaf[:0]
}

// fpos is a position in a freeSet; li == len(leaves) is the end.
type fpos struct{ li, ii int }

func (s *freeSet) len() int { return s.n }

func (s *freeSet) end() fpos { return fpos{len(s.leaves), 0} }

func (s *freeSet) valid(p fpos) bool { return p.li < len(s.leaves) }

func (s *freeSet) at(p fpos) *node { return s.leaves[p.li][p.ii].n }

func (s *freeSet) isBegin(p fpos) bool { return p.li == 0 && p.ii == 0 }

// prev returns the position before p; p must not be the beginning.
func (s *freeSet) prev(p fpos) fpos {
	if p.ii > 0 && p.li < len(s.leaves) {
		return fpos{p.li, p.ii - 1}
	}
	return fpos{p.li - 1, len(s.leaves[p.li-1]) - 1}
}

// next returns the position after p, which must be valid; it may be the end.
func (s *freeSet) next(p fpos) fpos {
	if p.ii+1 < len(s.leaves[p.li]) {
		return fpos{p.li, p.ii + 1}
	}
	return fpos{p.li + 1, 0}
}

// lowerBound returns the position of the first entry not less than k.
func (s *freeSet) lowerBound(k fkey) fpos {
	lo, hi := 0, len(s.last)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.last[m].less(k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(s.leaves) {
		return s.end()
	}
	leaf := s.leaves[lo]
	a, b := 0, len(leaf)
	for a < b {
		m := int(uint(a+b) >> 1)
		if leaf[m].k.less(k) {
			a = m + 1
		} else {
			b = m
		}
	}
	return fpos{lo, a}
}

func keyOf(n *node) fkey { return fkey{n.stream, n.size, n.addr} }

func (s *freeSet) insert(n *node) {
	k := keyOf(n)
	s.n++
	if len(s.leaves) == 0 {
		s.leaves = append(s.leaves, append(s.newLeaf(), fentry{k, n}))
		s.last = append(s.last, k)
		return
	}
	p := s.lowerBound(k)
	if p.li == len(s.leaves) { // beyond every key: append to the last leaf
		p = fpos{len(s.leaves) - 1, len(s.leaves[len(s.leaves)-1])}
	}
	leaf := s.leaves[p.li]
	leaf = append(leaf, fentry{})
	copy(leaf[p.ii+1:], leaf[p.ii:])
	leaf[p.ii] = fentry{k, n}
	s.leaves[p.li] = leaf
	s.last[p.li] = leaf[len(leaf)-1].k
	if len(leaf) > leafMax {
		half := len(leaf) / 2
		right := append(s.newLeaf(), leaf[half:]...)
		clear(leaf[half:])
		leaf = leaf[:half]
		s.leaves[p.li] = leaf
		s.last[p.li] = leaf[half-1].k
		s.leaves = append(s.leaves, nil)
		copy(s.leaves[p.li+2:], s.leaves[p.li+1:])
		s.leaves[p.li+1] = right
		s.last = append(s.last, fkey{})
		copy(s.last[p.li+2:], s.last[p.li+1:])
		s.last[p.li+1] = right[len(right)-1].k
	}
}

// remove deletes n, which must be in the set with its current key.
func (s *freeSet) remove(n *node) {
	p := s.lowerBound(keyOf(n))
	if !s.valid(p) || s.at(p) != n {
		panic("alloc: internal error: block missing from its pool")
	}
	s.removeAt(p)
}

func (s *freeSet) removeAt(p fpos) {
	s.n--
	leaf := s.leaves[p.li]
	copy(leaf[p.ii:], leaf[p.ii+1:])
	leaf[len(leaf)-1] = fentry{}
	leaf = leaf[:len(leaf)-1]
	if len(leaf) == 0 {
		s.keepLeaf(leaf)
		copy(s.leaves[p.li:], s.leaves[p.li+1:])
		s.leaves[len(s.leaves)-1] = nil
		s.leaves = s.leaves[:len(s.leaves)-1]
		s.last = append(s.last[:p.li], s.last[p.li+1:]...)
		return
	}
	s.leaves[p.li] = leaf
	s.last[p.li] = leaf[len(leaf)-1].k
	// Merge small neighbours so that the directory stays short.
	if p.li+1 < len(s.leaves) && len(leaf)+len(s.leaves[p.li+1]) <= leafMax/2 {
		leaf = append(leaf, s.leaves[p.li+1]...)
		s.keepLeaf(s.leaves[p.li+1])
		s.leaves[p.li] = leaf
		s.last[p.li] = leaf[len(leaf)-1].k
		copy(s.leaves[p.li+1:], s.leaves[p.li+2:])
		s.leaves[len(s.leaves)-1] = nil
		s.leaves = s.leaves[:len(s.leaves)-1]
		s.last = append(s.last[:p.li+1], s.last[p.li+2:]...)
	}
}

// each calls f for every node in order. f must not modify the set.
func (s *freeSet) each(f func(*node)) {
	for _, leaf := range s.leaves {
		for _, e := range leaf {
			f(e.n)
		}
	}
}

// nodes returns the nodes in order, for callers that modify the set.
func (s *freeSet) nodes() []*node {
	out := make([]*node, 0, s.n)
	s.each(func(n *node) { out = append(out, n) })
	return out
}
