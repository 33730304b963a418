package data

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzShard feeds arbitrary files to the shard reader: it must never
// panic, must report a rejected file as a *CorruptShardError, and every
// item of an accepted file must be readable.
func FuzzShard(f *testing.F) {
	var good bytes.Buffer
	ds, _ := NewTensorDataset([]float32{1, 2, 3, 4, 5, 6}, 3, 2)
	writeHeader(&good, ShardHeader{Dtype: Float32, ItemShape: []int{2}, Count: 3})
	for i := range 3 {
		it, _ := ds.Item(i)
		for _, v := range it.Data {
			good.Write([]byte{0, 0, byte(int(v) << 2), 0x40})
		}
	}
	f.Add(good.Bytes())
	f.Add(good.Bytes()[:30])
	f.Add([]byte("GPKSHARD"))
	f.Add(append(bytes.Clone(good.Bytes()), 1, 2, 3))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ReadShardHeader("fuzz", bytes.NewReader(b), int64(len(b)))
		if err != nil {
			var c *CorruptShardError
			if !errors.As(err, &c) {
				t.Fatalf("rejection is not a CorruptShardError: %v", err)
			}
			if c.Offset < 0 || c.Offset > int64(len(b)) {
				t.Fatalf("offset %d outside a file of %d bytes", c.Offset, len(b))
			}
			return
		}
		if h.Count > 1<<16 {
			return // a valid header of an enormous empty-item shard: nothing to read cheaply
		}
		p := filepath.Join(dir, "f.shard")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		sd, err := OpenShards(p)
		if err != nil {
			t.Fatalf("header accepted but OpenShards failed: %v", err)
		}
		defer sd.Close()
		for i := range sd.Len() {
			if _, err := sd.Item(i); err != nil {
				t.Fatalf("item %d of an accepted shard: %v", i, err)
			}
		}
	})
}

// FuzzLoader builds loaders from arbitrary options and data set sizes: an
// error, or an epoch that serves every item once; never a panic.
func FuzzLoader(f *testing.F) {
	f.Add(10, 3, 1, 2, true, false, uint64(1))
	f.Add(0, 1, 0, 0, false, true, uint64(0))
	f.Add(-1, -1, -1, -1, false, false, uint64(7))
	f.Fuzz(func(t *testing.T, n, batch, workers, prefetch int, shuffle, dropLast bool, seed uint64) {
		n, workers = n%200, workers%4 // keep each input fast
		ds, err := NewFuncDataset(n, []int{1}, func(i int, dst []float32) { dst[0] = float32(i) })
		if err != nil {
			return
		}
		l, err := NewLoader(ds, Options{BatchSize: batch, Workers: workers, Prefetch: prefetch % 8, Shuffle: shuffle, DropLast: dropLast, Seed: seed})
		if err != nil {
			return
		}
		defer l.Close()
		ep, err := l.Epoch(context.Background(), int(seed%5))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		forEach(t, ep.Next, func(b *Batch) {
			for _, i := range b.Indices {
				if seen[i] {
					t.Fatalf("item %d served twice", i)
				}
				seen[i] = true
			}
			b.Release()
		})
		if want := l.NumBatches() * batch; len(seen) > n || (!dropLast && len(seen) != n) || (dropLast && len(seen) != min(want, n)) {
			t.Fatalf("served %d of %d items (batch %d, drop last %v)", len(seen), n, batch, dropLast)
		}
	})
}
