package data

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A shard of items without values (shape [0]) may claim any count in 36
// bytes: it is refused, as is a loader over more items than the machine
// can hold the order of.
func TestAbsurdCountsAreRefused(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, writeHeader(&b, ShardHeader{Dtype: Float32, ItemShape: []int{0}, Count: 1 << 62}))
	require.Equal(t, 36, b.Len())
	path := filepath.Join(t.TempDir(), "empty.shard")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	_, err := OpenShards(path)
	var c *CorruptShardError
	require.ErrorAs(t, err, &c)
	assert.Contains(t, c.Reason, "items of shape [0] hold no values")

	err = WriteShard(filepath.Join(t.TempDir(), "x"), numbered(t, 2), []int{2, 0})
	assert.ErrorContains(t, err, "data: WriteShard")
	assert.ErrorContains(t, err, "items of shape [2 0] hold no values")

	huge, err := NewFuncDataset(math.MaxInt/2, []int{1}, func(int, []float32) {})
	require.NoError(t, err)
	_, err = NewLoader(huge, Options{BatchSize: 4})
	assert.ErrorContains(t, err, "data: NewLoader: an epoch's order of 4611686018427387903 items")
}

// Host memory larger than the machine is an error, pinned or not, never
// Go's fatal "out of memory".
func TestHostMemoryLargerThanTheMachine(t *testing.T) {
	dev := newSim(t)
	_, err := dev.HostAlloc(1<<60, true)
	assert.ErrorContains(t, err, "larger than this machine's memory")

	big, err := NewFuncDataset(2, []int{1 << 45}, func(int, []float32) { t.Error("fill must not run") })
	require.NoError(t, err)
	_, err = big.Item(0)
	assert.ErrorContains(t, err, "data: FuncDataset: item 0: ")
	for _, pin := range []bool{false, true} {
		opts := Options{BatchSize: 2}
		if pin {
			opts.Pin = dev
		}
		for _, collate := range []Collate{nil, Stack} {
			opts.Collate = collate
			l, err := NewLoader(big, opts)
			require.NoError(t, err)
			ep, err := l.Epoch(context.Background(), 0)
			require.NoError(t, err)
			_, err = ep.Next()
			assert.ErrorContains(t, err, "larger than this machine's memory", "pin %v", pin)
			l.Close()
		}
	}
}

type nilSource struct{}

func (nilSource) Next() (*Batch, error) { return nil, nil }

func TestDataMisuse(t *testing.T) {
	dev := newSim(t)
	assert.EqualError(t, WriteShard(filepath.Join(t.TempDir(), "x"), nil, []int{2}), "data: WriteShard: nil data set")
	_, err := ReadShardHeader("x", nil, 0)
	assert.EqualError(t, err, "data: shard x: nil reader")
	assert.EqualError(t, CopyToHostChunked(nil, nil, nil, 1, 0), "data: CopyToHostChunked: nil device, buffer or block")
	_, _, err = MapChunks(dev, nil, 1, 1<<20, nil)
	assert.EqualError(t, err, "data: MapChunks: nil device, data set or function")

	p, err := NewPrefetcher(dev, nilSource{}, dev.DefaultStream(), 2)
	require.NoError(t, err)
	_, err = p.Next()
	assert.EqualError(t, err, "data: prefetch: the source returned neither a batch nor an error")
	require.NoError(t, p.Close())

	l, err := NewLoader(numbered(t, 4), Options{BatchSize: 2})
	require.NoError(t, err)
	ep, err := l.Epoch(context.Background(), 0)
	require.NoError(t, err)
	p, err = NewPrefetcher(dev, ep, dev.DefaultStream(), 2)
	require.NoError(t, err)
	b, err := p.Next()
	require.NoError(t, err)
	assert.Equal(t, []float32{0, 1, 2, 3}, b.Float32s())
	b.Release()
	assert.Nil(t, b.Float32s(), "a released batch has no values")
	assert.Nil(t, (&DeviceBatch{}).Float32s())
	require.NoError(t, p.Close())
}

// blocking is a data set whose Item waits until release is closed.
type blocking struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (*blocking) Len() int { return 8 }
func (b *blocking) Item(int) (Item, error) {
	b.once.Do(func() { close(b.entered) })
	<-b.release
	return Item{Shape: []int{1}, Data: []float32{1}}, nil
}

// Closing the loader from another goroutine makes a Next that waits for a
// batch return ErrClosed, and Close waits for a worker stuck in Item only
// up to Options.CloseWait.
func TestLoaderCloseFromAnotherGoroutine(t *testing.T) {
	ds := &blocking{entered: make(chan struct{}), release: make(chan struct{})}
	l, err := NewLoader(ds, Options{BatchSize: 1, Workers: 1, CloseWait: 50 * time.Millisecond})
	require.NoError(t, err)
	ep, err := l.Epoch(context.Background(), 0)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		_, err := ep.Next()
		got <- err
	}()
	<-ds.entered
	start := time.Now()
	err = l.Close()
	assert.ErrorContains(t, err, "data: Close: 1 worker(s) still loading")
	assert.Less(t, time.Since(start), 10*time.Second)
	select {
	case err := <-got:
		assert.ErrorIs(t, err, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("Next did not return after Close")
	}
	close(ds.release) // the worker returns and releases what it loaded
	_, err = ep.Next()
	assert.ErrorIs(t, err, ErrClosed)
	assert.False(t, errors.Is(err, io.EOF))
}
