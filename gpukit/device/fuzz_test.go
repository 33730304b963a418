package device_test

import (
	"bytes"
	"errors"
	"sort"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
)

// FuzzSim drives a sim device through random malloc, free, copy, launch,
// event and EmptyCache sequences and checks, after every step, that live
// blocks hold exactly what was written to them, never overlap, lie inside
// live segments, and that the accounting and the clocks agree.
func FuzzSim(f *testing.F) {
	f.Add([]byte{0, 10, 0, 200, 1, 0, 2, 0, 3, 1, 4, 0, 5, 0})
	f.Add([]byte{0, 255, 0, 255, 0, 255, 2, 1, 2, 0, 6, 0, 1, 1, 1, 0})
	f.Add(bytes.Repeat([]byte{0, 77, 2, 3, 4, 1, 3, 2, 1, 0}, 20))
	f.Fuzz(runProgram)
}

// pattern is the pseudo-random data written to blocks.
var pattern = func() []byte {
	p := make([]byte, 4096+(31<<20))
	x := uint32(1)
	for i := range p {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		p[i] = byte(x)
	}
	return p
}()

func runProgram(t *testing.T, prog []byte) {
	{
		p, _ := device.LookupProfile("classroom")
		p = p.Resized(64 << 20) // small, so that OOM and retries happen
		b := sim.New(0, p)
		d, err := device.New(b, device.WithAllocConfig(alloc.Config{}))
		if err != nil {
			t.Fatal(err)
		}
		streams := []alloc.Stream{0, d.NewStream(), d.NewStream()}
		type live struct {
			blk  *alloc.Block
			data []byte // what the first Requested bytes must hold
		}
		var blocks []live
		var seq int
		fill := func(n int64) []byte {
			seq = (seq*31 + 7) % 4096
			return append([]byte(nil), pattern[seq:seq+int(n)]...)
		}
		sizes := []int64{1, 512, 4000, 1 << 20, (1 << 20) + 1, 3 << 20, 12 << 20, 30 << 20}
		if len(prog) > 300 {
			prog = prog[:300]
		}
		last := d.Now()
		for i := 0; i+1 < len(prog); i += 2 {
			op, arg := prog[i]%8, int(prog[i+1])
			s := streams[arg%len(streams)]
			switch op {
			case 0, 1: // malloc and fill
				size := sizes[arg%len(sizes)] + int64(arg/len(sizes))
				blk, err := d.Malloc(size, s)
				if err != nil {
					var oom *alloc.OutOfMemoryError
					if !errors.As(err, &oom) {
						t.Fatalf("malloc(%d): %v", size, err)
					}
					continue
				}
				data := fill(size)
				if err := d.CopyToDevice(blk, 0, data, arg%2 == 0, s, arg%3 == 0); err != nil {
					t.Fatal(err)
				}
				blocks = append(blocks, live{blk, data})
			case 2: // free
				if len(blocks) > 0 {
					j := arg % len(blocks)
					d.Free(blocks[j].blk)
					blocks = append(blocks[:j], blocks[j+1:]...)
				}
			case 3: // device-to-device copy between two live blocks
				if len(blocks) > 1 {
					x, y := &blocks[arg%len(blocks)], &blocks[(arg/3)%len(blocks)]
					if x == y {
						continue
					}
					n := min(int64(len(x.data)), int64(len(y.data)))
					if err := d.CopyDevice(y.blk, 0, x.blk, 0, n, s); err != nil {
						t.Fatal(err)
					}
					// Both blocks are in use on s until the copy runs: as
					// PyTorch asks (record_stream), so that neither is
					// handed out again while the copy is pending.
					d.RecordStream(x.blk, s)
					d.RecordStream(y.blk, s)
					copy(y.data, x.data[:n])
				}
			case 4: // read back a block
				if len(blocks) > 0 {
					x := blocks[arg%len(blocks)]
					got := make([]byte, len(x.data))
					// Copies on other streams land when those streams get
					// to them (sim defers them): wait for all of them
					// before reading, as a program must.
					d.Synchronize()
					if err := d.CopyToHost(got, x.blk, 0, arg%2 == 1, s, false); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, x.data) {
						t.Fatalf("block at 0x%x: read back differs from what was written", x.blk.Addr())
					}
				}
			case 5:
				d.Launch(s, device.Kernel{Flops: int64(arg) << 20, Bytes: int64(arg) << 16, Half: arg%2 == 0})
				if e := d.RecordEvent(s); arg%4 == 0 {
					e.Synchronize()
					if !e.Query() {
						t.Fatal("event not done after Synchronize")
					}
				}
			case 6:
				d.EmptyCache()
			case 7:
				d.Synchronize()
			}
			// Invariants.
			if now := d.Now(); now < last {
				t.Fatalf("host clock went back from %v to %v", last, now)
			} else {
				last = now
			}
			free, total := d.MemInfo()
			if total != p.Capacity || free != total-d.MemoryReserved() {
				t.Fatalf("MemInfo free %d total %d, reserved %d", free, total, d.MemoryReserved())
			}
			if _, used := b.Segments(); used != d.MemoryReserved() {
				t.Fatalf("backend holds %d bytes, allocator reserves %d", used, d.MemoryReserved())
			}
			checkContents := i%32 == 0 || i+3 >= len(prog)
			if checkContents {
				d.Synchronize() // pending copies land first, as before any read
			}
			sorted := append([]live(nil), blocks...)
			sort.Slice(sorted, func(i, j int) bool { return sorted[i].blk.Addr() < sorted[j].blk.Addr() })
			var allocated int64
			for k, x := range sorted {
				allocated += x.blk.Size()
				got := d.Bytes(x.blk)
				if int64(len(got)) != x.blk.Size() || checkContents && !bytes.Equal(got[:len(x.data)], x.data) {
					t.Fatalf("block at 0x%x: Bytes has length %d or wrong contents", x.blk.Addr(), len(got))
				}
				if x.blk.Addr()%512 != 0 {
					t.Fatalf("block at 0x%x is not 512-aligned", x.blk.Addr())
				}
				if k > 0 && sorted[k-1].blk.Addr()+uint64(sorted[k-1].blk.Size()) > x.blk.Addr() {
					t.Fatalf("blocks at 0x%x and 0x%x overlap", sorted[k-1].blk.Addr(), x.blk.Addr())
				}
			}
			if allocated != d.MemoryAllocated() {
				t.Fatalf("live blocks hold %d bytes, allocator reports %d", allocated, d.MemoryAllocated())
			}
		}
		for _, x := range blocks {
			d.Free(x.blk)
		}
		d.EmptyCache()
		if n, used := b.Segments(); n != 0 || used != 0 {
			t.Fatalf("after freeing everything and EmptyCache: %d segments, %d bytes", n, used)
		}
	}
}
