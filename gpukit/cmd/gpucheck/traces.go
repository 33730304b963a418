package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// traceOp is one line of a memtrace trace (gpukit/cmd/memtrace/doc.go).
type traceOp struct {
	Op     string `json:"op"`
	ID     string `json:"id,omitempty"`
	Size   *int64 `json:"size,omitempty"`
	Stream int64  `json:"stream,omitempty"`
}

// trace is an allocator trace that gpu-check replays on gpukit (sim and
// cuda:0, with memtrace) and on PyTorch (scripts/gpu_judge.py).
type trace struct {
	Name string
	Conf string // PYTORCH_CUDA_ALLOC_CONF for both sides ("" for defaults)
	Ops  []traceOp
}

const (
	kiB = 1 << 10
	miB = 1 << 20
)

// traceBuilder writes ops with fresh ids.
type traceBuilder struct {
	t    trace
	next int
}

func (b *traceBuilder) alloc(size int64, stream int64) string {
	id := fmt.Sprintf("b%d", b.next)
	b.next++
	b.t.Ops = append(b.t.Ops, traceOp{Op: "alloc", ID: id, Size: &size, Stream: stream})
	return id
}

func (b *traceBuilder) free(id string) { b.t.Ops = append(b.t.Ops, traceOp{Op: "free", ID: id}) }
func (b *traceBuilder) op(name string) { b.t.Ops = append(b.t.Ops, traceOp{Op: name}) }

// judgeTraces are the traces of the judge: the allocator examples of
// lessons 02 and 04 and the policy's corners, then seeded random mixes.
// Every trace stays far below an 80 GB card's memory (no OOM: the
// capacities of the two sides differ by the CUDA context).
func judgeTraces() []trace {
	var ts []trace
	add := func(name, conf string, build func(b *traceBuilder)) {
		b := &traceBuilder{t: trace{Name: name, Conf: conf}}
		build(b)
		ts = append(ts, b.t)
	}
	add("lesson02-two-blocks", "", func(b *traceBuilder) {
		x, y := b.alloc(4_000_000, 0), b.alloc(4_000_000, 0)
		b.free(x)
		b.free(y)
	})
	add("lesson02-peaks", "", func(b *traceBuilder) {
		b.alloc(64*miB, 0)
		for range 3 {
			var temps []string
			for range 4 {
				temps = append(temps, b.alloc(30*miB, 0))
			}
			for _, t := range temps {
				b.free(t)
			}
		}
		b.op("reset_peak")
		b.alloc(1*miB, 0)
		b.op("empty_cache")
	})
	add("small-pool-splits", "", func(b *traceBuilder) {
		var ids []string
		for i := range 40 {
			ids = append(ids, b.alloc(int64(1+i*37*kiB%(1*miB)), 0))
		}
		for i := 0; i < len(ids); i += 2 {
			b.free(ids[i])
		}
		for i := range 20 {
			b.alloc(int64(300*kiB+i*512), 0)
		}
		b.op("empty_cache")
	})
	add("large-pool-splits", "", func(b *traceBuilder) {
		// Below 10 MiB: 20 MiB segments, split when more than 1 MiB is left.
		x, y, z := b.alloc(3*miB, 0), b.alloc(5*miB+1, 0), b.alloc(9*miB, 0)
		b.free(y)
		b.alloc(4*miB, 0)
		b.free(x)
		b.free(z)
		// Above: the request rounded up to 2 MiB, one segment each.
		big := b.alloc(25_000_001, 0)
		b.free(big)
		b.alloc(21*miB, 0)
		b.op("empty_cache")
	})
	add("two-streams", "", func(b *traceBuilder) {
		x := b.alloc(1*miB, 1)
		y := b.alloc(1*miB, 0)
		b.free(x)
		b.alloc(512*kiB, 0) // stream 0 may not reuse stream 1's block
		b.alloc(512*kiB, 1)
		b.free(y)
		b.op("empty_cache")
	})
	add("max-split-size", "max_split_size_mb:64", func(b *traceBuilder) {
		x := b.alloc(100*miB, 0)
		b.free(x)
		b.alloc(70*miB, 0) // an oversize block is not split
		b.alloc(30*miB, 0)
		b.op("empty_cache")
	})
	add("roundup-power2", "roundup_power2_divisions:4", func(b *traceBuilder) {
		for _, s := range []int64{1_100_000, 5*miB + 3, 13*miB + 7, 40 * miB} {
			b.free(b.alloc(s, 0))
			b.alloc(s, 0)
		}
		b.op("empty_cache")
	})
	for seed := range uint64(4) {
		add(fmt.Sprintf("random-%d", seed), "", func(b *traceBuilder) {
			rng := rand.New(rand.NewPCG(26, seed))
			var live []string
			for i := range 300 {
				switch {
				case len(live) > 0 && rng.IntN(3) == 0:
					j := rng.IntN(len(live))
					b.free(live[j])
					live = append(live[:j], live[j+1:]...)
				case i%97 == 96:
					b.op("empty_cache")
				case i%131 == 130:
					b.op("reset_peak")
				default:
					sizes := []int64{1 + rng.Int64N(4*kiB), 1 + rng.Int64N(miB), 1 + rng.Int64N(12*miB), 1 + rng.Int64N(48*miB)}
					live = append(live, b.alloc(sizes[rng.IntN(len(sizes))], 0))
				}
			}
		})
	}
	return ts
}

// writeTraces writes each trace to dir as NAME.jsonl, and its allocator
// configuration, when it has one, as NAME.conf.
func writeTraces(dir string, ts []trace) error {
	for _, t := range ts {
		var b strings.Builder
		for _, o := range t.Ops {
			line, err := json.Marshal(o)
			if err != nil {
				return err
			}
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := writeFileAtomic(filepath.Join(dir, t.Name+".jsonl"), []byte(b.String())); err != nil {
			return err
		}
		if t.Conf != "" {
			if err := writeFileAtomic(filepath.Join(dir, t.Name+".conf"), []byte(t.Conf+"\n")); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeFileAtomic writes data to path through a temporary file in the
// same folder and a rename. A path that exists and is not a regular file
// (after resolving symlinks) is refused.
func writeFileAtomic(path string, data []byte) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("gpucheck: %s exists and is not a regular file", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".gpucheck-*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("gpucheck: writing %s: %w", path, err)
	}
	return nil
}
