package grader

import "sync"

// onceCache keeps what a grader's run computes once and uses for many
// submissions: the rewritten hidden tests of each exercise (the rewrite
// type-checks the package), the export data the type checks read.
type onceCache[T any] struct {
	mu      sync.Mutex
	entries map[string]*onceEntry[T]
}

type onceEntry[T any] struct {
	ready chan struct{} // closed when value and err are set
	value T
	err   error
}

// get returns the entry for key, made by build on the first call (a
// concurrent call for the same key waits for it); a failure is not
// kept, so a later call tries again. A nil cache builds every time.
func (c *onceCache[T]) get(key string, build func() (T, error)) (T, error) {
	if c == nil {
		return build()
	}
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.mu.Unlock()
		<-e.ready
		return e.value, e.err
	}
	e := &onceEntry[T]{ready: make(chan struct{})}
	if c.entries == nil {
		c.entries = map[string]*onceEntry[T]{}
	}
	c.entries[key] = e
	c.mu.Unlock()
	e.value, e.err = build()
	if e.err != nil {
		c.mu.Lock()
		delete(c.entries, key)
		c.mu.Unlock()
	}
	close(e.ready)
	return e.value, e.err
}
