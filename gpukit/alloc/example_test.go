package alloc_test

import (
	"errors"
	"fmt"

	"github.com/gpumem/course/gpukit/alloc"
)

// A 4,000,000-byte request is rounded to 4,000,256 bytes and carved out of a
// new 20 MiB segment; the rest of the segment stays cached.
func Example() {
	a := alloc.New(alloc.NewFakeMemory(2<<30), alloc.Config{}, 0)
	b, _ := a.Malloc(4_000_000, 0)
	st := a.Stats()
	fmt.Println("block size:", b.Size())
	fmt.Println("allocated: ", st["allocated_bytes.all.current"])
	fmt.Println("reserved:  ", st["reserved_bytes.all.current"])
	fmt.Println("cached:    ", st["inactive_split_bytes.all.current"])

	a.Free(b)
	b2, _ := a.Malloc(4_000_000, 0)
	fmt.Println("reused the same address:", b2.Addr() == b.Addr())
	fmt.Println("device mallocs:", a.Stats()["num_device_alloc"])
	// Output:
	// block size: 4000256
	// allocated:  4000256
	// reserved:   20971520
	// cached:     16971264
	// reused the same address: true
	// device mallocs: 1
}

func ExampleParseConfig() {
	cfg, err := alloc.ParseConfig("max_split_size_mb:128, roundup_power2_divisions:4")
	fmt.Println(cfg, err)
	fmt.Println(cfg.RoundSize(88_080_384))

	_, err = alloc.ParseConfig("expandable_segments:true")
	fmt.Println(err)
	_, err = alloc.ParseConfig("garbage_collection_threshold:1.5")
	fmt.Println(err)
	// Output:
	// max_split_size_mb:128,roundup_power2_divisions:4 <nil>
	// 100663296
	// alloc: config expandable_segments:true: expected True or False
	// alloc: config garbage_collection_threshold:1.5: must be a number in the open interval (0.0, 1.0)
}

func ExampleOutOfMemoryError() {
	a := alloc.New(alloc.NewFakeMemory(64<<20), alloc.Config{}, 0)
	a.Malloc(50<<20, 0)
	_, err := a.Malloc(5<<20, 0)
	var oom *alloc.OutOfMemoryError
	fmt.Println(errors.As(err, &oom))
	fmt.Println(err)
	fmt.Println("retries:", a.Stats()["num_alloc_retries"], "ooms:", a.Stats()["num_ooms"])
	// Output:
	// true
	// alloc: out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 64.00 MiB of which 14.00 MiB is free. Of the allocated memory 50.00 MiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.
	// retries: 1 ooms: 1
}

func ExampleAllocator_EmptyCache() {
	a := alloc.New(alloc.NewFakeMemory(1<<30), alloc.Config{}, 0)
	keep, _ := a.Malloc(1000, 0)
	tmp, _ := a.Malloc(30<<20, 0)
	a.Free(tmp)
	fmt.Println("reserved before:", alloc.FormatSize(a.MemoryReserved()))
	a.EmptyCache()
	fmt.Println("reserved after: ", alloc.FormatSize(a.MemoryReserved()))
	a.Free(keep)
	// Output:
	// reserved before: 32.00 MiB
	// reserved after:  2.00 MiB
}

func ExampleAllocator_RecordStream() {
	mem := alloc.NewFakeMemory(1 << 30)
	a := alloc.New(mem, alloc.Config{}, 0)
	b, _ := a.Malloc(1000, 0)
	a.RecordStream(b, 1) // a kernel on stream 1 still reads b
	a.Free(b)
	fmt.Println(a.Snapshot().Segments[0].Blocks[0].State)
	c, _ := a.Malloc(1000, 0)
	fmt.Println("reused while stream 1 runs:", c.Addr() == b.Addr())
	mem.Complete(1)
	d, _ := a.Malloc(1000, 0)
	fmt.Println("reused after stream 1 finished:", d.Addr() == b.Addr())
	// Output:
	// active_pending_free
	// reused while stream 1 runs: false
	// reused after stream 1 finished: true
}

// Example_expandableSegments runs batches of 4 to 9 samples of 3 MiB, each
// freed before the next, with and without expandable segments: plain
// segments leave one cached segment per batch size, an expandable segment
// grows by 20 MiB pages and serves every batch.
func Example_expandableSegments() {
	for _, conf := range []string{"", "expandable_segments:True"} {
		cfg, _ := alloc.ParseConfig(conf)
		a := alloc.New(alloc.NewFakeMemory(1<<30), cfg, 0)
		for n := int64(4); n <= 9; n++ {
			b, _ := a.Malloc(n*3<<20, 0)
			a.Free(b)
		}
		st := a.Stats()
		fmt.Printf("%-26q reserved %s, segments %d in the snapshot (segment.all.current %d), device mallocs or maps %d\n",
			conf, alloc.FormatSize(a.MemoryReserved()), len(a.Snapshot().Segments), st["segment.all.current"], st["num_device_alloc"])
	}
	// Output:
	// ""                         reserved 120.00 MiB, segments 6 in the snapshot (segment.all.current 6), device mallocs or maps 6
	// "expandable_segments:True" reserved 40.00 MiB, segments 1 in the snapshot (segment.all.current 0), device mallocs or maps 2
}
