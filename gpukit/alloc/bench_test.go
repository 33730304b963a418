package alloc_test

import (
	"fmt"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
)

// setupFragmented returns an allocator with n live blocks and n cached
// blocks of the same size between them, so the free pool holds n entries.
func setupFragmented(b *testing.B, n int, size int64) *alloc.Allocator {
	a := alloc.New(alloc.NewFakeMemory(1<<40), alloc.Config{}, 0)
	blocks := make([]*alloc.Block, 0, 2*n)
	for range 2 * n {
		blk, err := a.Malloc(size, 0)
		if err != nil {
			b.Fatal(err)
		}
		blocks = append(blocks, blk)
	}
	for i := 0; i < len(blocks); i += 2 {
		a.Free(blocks[i])
	}
	return a
}

// BenchmarkMallocFreeCached measures a Malloc+Free pair served from the
// cache with 10^3..10^5 live blocks (and as many cached ones).
func BenchmarkMallocFreeCached(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		for _, size := range []int64{512, 3 << 20} {
			b.Run(fmt.Sprintf("live=%d/size=%d", n, size), func(b *testing.B) {
				a := setupFragmented(b, n, size)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					blk, err := a.Malloc(size, 0)
					if err != nil {
						b.Fatal(err)
					}
					a.Free(blk)
				}
			})
		}
	}
}

// BenchmarkMallocFreeMixed cycles through several sizes so that blocks are
// split and merged on every pair.
func BenchmarkMallocFreeMixed(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("live=%d", n), func(b *testing.B) {
			a := setupFragmented(b, n, 4096)
			sizes := []int64{512, 1024, 2048, 4096, 8192}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				blk, err := a.Malloc(sizes[i%len(sizes)], 0)
				if err != nil {
					b.Fatal(err)
				}
				a.Free(blk)
			}
		})
	}
}
