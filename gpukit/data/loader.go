package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/internal/hostmem"
)

// ErrClosed is returned by a loader, or an epoch, used after Close.
var ErrClosed = errors.New("data: loader is closed")

// Batch is a collated batch in host memory.
type Batch struct {
	Number  int       // position in the epoch, from 0
	Indices []int     // the data set indices of its items, in order
	Shape   []int     // [len(Indices), item shape...] for the default collate
	Data    []float32 // the values, row-major

	host *device.HostBuffer // page-locked memory behind Data, or nil
	pool *sync.Pool         // where Data goes back on Release, or nil
}

// Pinned reports whether Data lies in page-locked memory.
func (b *Batch) Pinned() bool { return b.host != nil }

// Bytes returns Data as bytes (shared, not copied), for host-to-device copies.
func (b *Batch) Bytes() []byte {
	if len(b.Data) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&b.Data[0])), 4*len(b.Data))
}

// Release gives back the batch's page-locked memory, if any. The batch must
// not be used afterwards.
func (b *Batch) Release() {
	if b.host != nil {
		b.host.Free()
		b.host = nil
	} else if b.pool != nil && b.Data != nil {
		buf := b.Data
		b.pool.Put(&buf)
	}
	b.Data = nil
}

// Collate turns the items of one batch into its shape and values. alloc
// returns memory for n values (page-locked when the loader pins): use it
// for the values so that pinning works, and write all n of them: the
// memory of released batches is reused without being zeroed.
type Collate func(items []Item, indices []int, alloc func(n int) ([]float32, error)) (shape []int, values []float32, err error)

// Stack is the default collate: items of one shape stacked along a new
// first dimension. An item whose shape differs from the first is an error
// that names its index.
func Stack(items []Item, indices []int, alloc func(n int) ([]float32, error)) ([]int, []float32, error) {
	if len(items) == 0 {
		return nil, nil, fmt.Errorf("data: Stack: no items")
	}
	shape := items[0].Shape
	size, err := numel(shape)
	if err != nil {
		return nil, nil, fmt.Errorf("data: Stack: item %d: %w", indices[0], err)
	}
	for k, it := range items {
		if !slices.Equal(it.Shape, shape) || len(it.Data) != size {
			return nil, nil, fmt.Errorf("data: Stack: item %d has shape %v (%d values), item %d has shape %v: items of a batch must have one shape",
				indices[k], it.Shape, len(it.Data), indices[0], shape)
		}
	}
	total, err := numel([]int{len(items), size})
	if err != nil {
		return nil, nil, fmt.Errorf("data: Stack: %w", err)
	}
	out, err := alloc(total)
	if err != nil {
		return nil, nil, err
	}
	for k, it := range items {
		copy(out[k*size:], it.Data)
	}
	return append([]int{len(items)}, shape...), out, nil
}

// Options configure a Loader. The zero value of each field is its default.
type Options struct {
	BatchSize int    // items per batch; must be positive
	Shuffle   bool   // a new order every epoch, from Seed and the epoch number
	Seed      uint64 // the same seed gives the same order on every machine
	DropLast  bool   // drop the last, incomplete batch
	// Workers is the number of goroutines that read and collate batches.
	// 0 loads each batch in Next, on the caller's goroutine.
	Workers int
	// Prefetch is how many batches each worker may have ready ahead of the
	// consumer (PyTorch's prefetch_factor); default 2.
	Prefetch int
	// Pin, when set, puts batches in page-locked host memory of this
	// device, so that copies to it can be asynchronous.
	Pin *device.Device
	// Collate builds a batch from its items; default Stack.
	Collate Collate
	// CloseWait bounds how long Close waits for workers to return (one
	// stuck in a data set's Item cannot be interrupted); default 10s.
	// Workers still running then finish in the background and release
	// what they loaded.
	CloseWait time.Duration
}

// defaultCloseWait is Options.CloseWait's default.
const defaultCloseWait = 10 * time.Second

// Loader serves a data set in batches, epoch after epoch
// (torch.utils.data.DataLoader). It is safe for one consumer goroutine.
type Loader struct {
	ds     Dataset
	opts   Options
	reader ItemReader // ds, when it reads into batches and Collate is the default
	// buffers recycles the values of released pageable batches: a batch's
	// memory is written whole by the collate, so it need not be zeroed.
	buffers sync.Pool

	mu      sync.Mutex
	closed  bool
	current *Epoch
}

// NewLoader checks opts and returns a loader over ds.
func NewLoader(ds Dataset, opts Options) (*Loader, error) {
	switch {
	case ds == nil:
		return nil, fmt.Errorf("data: NewLoader: nil data set")
	case opts.BatchSize <= 0:
		return nil, fmt.Errorf("data: NewLoader: batch size %d; it must be at least 1", opts.BatchSize)
	case opts.Workers < 0:
		return nil, fmt.Errorf("data: NewLoader: %d workers; use 0 to load on the caller's goroutine", opts.Workers)
	case opts.Prefetch < 0:
		return nil, fmt.Errorf("data: NewLoader: prefetch depth %d must not be negative", opts.Prefetch)
	case opts.CloseWait < 0:
		return nil, fmt.Errorf("data: NewLoader: CloseWait %v must not be negative", opts.CloseWait)
	}
	if err := checkOrder(ds.Len()); err != nil {
		return nil, fmt.Errorf("data: NewLoader: %w", err)
	}
	if opts.Prefetch == 0 {
		opts.Prefetch = 2
	}
	if opts.CloseWait == 0 {
		opts.CloseWait = defaultCloseWait
	}
	l := &Loader{ds: ds, opts: opts}
	if opts.Collate == nil {
		l.opts.Collate = Stack
		l.reader, _ = ds.(ItemReader)
	}
	return l, nil
}

// NumBatches returns the number of batches in one epoch.
func (l *Loader) NumBatches() int {
	n, b := l.ds.Len(), l.opts.BatchSize
	if l.opts.DropLast {
		return n / b
	}
	return n/b + min(1, n%b)
}

// checkOrder refuses a data set of n items whose epoch order (one int per
// item) does not fit in host memory.
func checkOrder(n int) error {
	if n < 0 {
		return fmt.Errorf("the data set has %d items", n)
	}
	if n > math.MaxInt64/8 || hostmem.Check("", 8*int64(n)) != nil {
		return fmt.Errorf("an epoch's order of %d items does not fit in host memory", n)
	}
	return nil
}

// Order returns the data set indices of one epoch, in the order the loader
// serves them: 0..n-1, or a permutation drawn from Seed and epoch.
func (l *Loader) Order(epoch int) []int {
	order := make([]int, l.ds.Len())
	for i := range order {
		order[i] = i
	}
	if l.opts.Shuffle {
		shuffle(order, l.opts.Seed, uint64(epoch))
	}
	return order
}

// shuffle is Fisher-Yates driven by SplitMix64 and Lemire's bounded
// integers, written out here so that the order depends on nothing but the
// seed (not on the Go version or the machine).
func shuffle(order []int, seed, epoch uint64) {
	state := seed ^ (epoch+1)*0x9e3779b97f4a7c15
	next := func() uint64 {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
	for i := len(order) - 1; i > 0; i-- {
		n := uint64(i + 1)
		hi, lo := bits.Mul64(next(), n)
		if lo < n {
			for thresh := -n % n; lo < thresh; {
				hi, lo = bits.Mul64(next(), n)
			}
		}
		order[i], order[hi] = order[hi], order[i]
	}
}

// Epoch starts serving epoch number epoch: with Workers > 0 its goroutines
// start loading at once. Only one epoch runs at a time: starting one closes
// the previous. Cancelling ctx, closing the epoch or closing the loader
// stops every worker.
func (l *Loader) Epoch(ctx context.Context, epoch int) (*Epoch, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if l.current != nil {
		l.current.Close()
	}
	if err := checkOrder(l.ds.Len()); err != nil { // Len may have grown
		return nil, fmt.Errorf("data: Epoch: %w", err)
	}
	order := l.Order(epoch)
	nb := l.NumBatches()
	ctx, cancel := context.WithCancel(ctx)
	e := &Epoch{l: l, ctx: ctx, cancel: cancel, order: order, nb: nb}
	if w := l.opts.Workers; w > 0 {
		e.out = make([]chan result, w)
		for i := range e.out {
			e.out[i] = make(chan result, l.opts.Prefetch)
		}
		e.wg.Add(w)
		e.running.Store(int64(w))
		for i := range w {
			go e.work(i)
		}
	}
	l.current = e
	return e, nil
}

// Close stops the running epoch and its workers and makes the loader
// refuse further use; it returns Epoch.Close's error. It is safe to call
// more than once, from any goroutine.
func (l *Loader) Close() error {
	l.mu.Lock()
	l.closed = true
	e := l.current
	l.current = nil
	l.mu.Unlock()
	if e != nil {
		return e.Close()
	}
	return nil
}

type result struct {
	b   *Batch
	err error
}

// Epoch is one pass over the data set. Next returns its batches in order.
type Epoch struct {
	l      *Loader
	ctx    context.Context
	cancel context.CancelFunc
	order  []int
	nb     int
	out    []chan result // one per worker; batch k comes from worker k%W
	wg     sync.WaitGroup

	running atomic.Int64 // workers that have not returned

	next   int   // number of the batch Next returns next
	err    error // sticky: after an error Next keeps returning it
	closed atomic.Bool
}

func (e *Epoch) work(w int) {
	defer e.wg.Done()
	defer e.running.Add(-1)
	workers := len(e.out)
	for k := w; k < e.nb; k += workers {
		if e.ctx.Err() != nil {
			return
		}
		b, err := e.load(k)
		select {
		case e.out[w] <- result{b, err}:
		case <-e.ctx.Done():
			if b != nil {
				b.Release()
			}
			return
		}
		if err != nil {
			return
		}
	}
}

// load reads and collates batch k. A panic in the data set or the collate
// function becomes an error for the consumer.
func (e *Epoch) load(k int) (b *Batch, err error) {
	defer func() {
		if r := recover(); r != nil {
			if b != nil {
				b.Release()
				b = nil
			}
			err = fmt.Errorf("data: batch %d: panic while loading: %v\n%s", k, r, debug.Stack())
		}
	}()
	bs := e.l.opts.BatchSize
	lo, hi := k*bs, min((k+1)*bs, len(e.order))
	indices := e.order[lo:hi:hi]
	b = &Batch{Number: k, Indices: indices}
	alloc := func(n int) ([]float32, error) {
		if n < 0 || n > (1<<62)/4 {
			return nil, fmt.Errorf("data: batch of %d values is too large", n)
		}
		if err := hostmem.Check("data: batch", 4*int64(n)); err != nil {
			return nil, err
		}
		if e.l.opts.Pin == nil || n == 0 {
			b.pool = &e.l.buffers
			if v, ok := e.l.buffers.Get().(*[]float32); ok && cap(*v) >= n {
				return (*v)[:n], nil
			}
			return make([]float32, n), nil
		}
		if b.host != nil {
			return nil, fmt.Errorf("data: collate asked for pinned memory twice in one batch")
		}
		h, err := e.l.opts.Pin.HostAlloc(int64(4*n), true)
		if err != nil {
			return nil, err
		}
		b.host = h
		return unsafe.Slice((*float32)(unsafe.Pointer(&h.Bytes[0])), n), nil
	}
	if r := e.l.reader; r != nil {
		if err := e.read(r, b, alloc); err != nil {
			b.Release()
			return nil, fmt.Errorf("data: batch %d: %w", k, err)
		}
		return b, nil
	}
	items := make([]Item, len(indices))
	for j, i := range indices {
		if items[j], err = e.l.ds.Item(i); err != nil {
			return nil, fmt.Errorf("data: batch %d: item %d: %w", k, i, err)
		}
	}
	shape, values, err := e.l.opts.Collate(items, indices, alloc)
	if err != nil {
		b.Release()
		return nil, fmt.Errorf("data: batch %d: %w", k, err)
	}
	b.Shape, b.Data = shape, values
	return b, nil
}

// read fills b through r: the default collate (Stack) without an
// allocation per item, one read per run of consecutive indices.
func (e *Epoch) read(r ItemReader, b *Batch, alloc func(int) ([]float32, error)) error {
	itemShape := r.ItemShape()
	size, err := numel(itemShape)
	if err != nil {
		return err
	}
	total, err := numel([]int{len(b.Indices), size})
	if err != nil {
		return err
	}
	if b.Data, err = alloc(total); err != nil {
		return err
	}
	b.Shape = append([]int{len(b.Indices)}, itemShape...)
	for j := 0; j < len(b.Indices); {
		run := 1
		for j+run < len(b.Indices) && b.Indices[j+run] == b.Indices[j]+run {
			run++
		}
		if err := r.ReadItems(b.Indices[j], run, b.Data[j*size:(j+run)*size]); err != nil {
			return fmt.Errorf("item %d: %w", b.Indices[j], err)
		}
		j += run
	}
	return nil
}

// Next returns the next batch of the epoch, io.EOF after the last, the
// error of a worker that failed (or panicked), ctx's error once it is
// cancelled, or ErrClosed after Close.
func (e *Epoch) Next() (*Batch, error) {
	if e.closed.Load() {
		return nil, ErrClosed
	}
	if e.err != nil {
		return nil, e.err
	}
	if err := e.ctx.Err(); err != nil {
		e.err = err
		return nil, err
	}
	if e.next >= e.nb {
		return nil, io.EOF
	}
	k := e.next
	var r result
	if e.out == nil {
		r.b, r.err = e.load(k)
	} else {
		select {
		case r = <-e.out[k%len(e.out)]:
		case <-e.ctx.Done():
			r.err = e.ctx.Err()
			if e.closed.Load() { // closed by another goroutine: not the caller's context
				r.err = ErrClosed
			}
		}
	}
	if r.err != nil {
		e.err = r.err
		e.cancel() // stop the other workers: the epoch is over
		return nil, r.err
	}
	e.next++
	return r.b, nil
}

// Close stops the epoch's workers, waits for them to return, and releases
// the batches they had ready. It is safe to call more than once. A worker
// inside the data set's Item cannot be interrupted: Close waits for the
// workers at most Options.CloseWait and then returns an error; the
// batches are released when the last worker returns.
func (e *Epoch) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	e.cancel()
	if len(e.out) == 0 { // no workers: Next loads on the caller's goroutine
		return nil
	}
	done := make(chan struct{})
	go func() {
		e.wg.Wait()
		for _, ch := range e.out {
			for len(ch) > 0 {
				if r := <-ch; r.b != nil {
					r.b.Release()
				}
			}
		}
		close(done)
	}()
	t := time.NewTimer(e.l.opts.CloseWait)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return fmt.Errorf("data: Close: %d worker(s) still loading after %v (inside the data set's Item?); it finishes in the background", e.running.Load(), e.l.opts.CloseWait)
	}
}
