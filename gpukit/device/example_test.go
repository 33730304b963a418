package device_test

import (
	"fmt"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
)

// Open a simulated card and look at its profile.
func ExampleOpen() {
	t4, _ := device.LookupProfile("t4")
	d, err := device.Open("sim:1", device.WithProfile(t4))
	if err != nil {
		panic(err)
	}
	p := d.Profile()
	fmt.Println(d.Name(), p.Description)
	fmt.Printf("capacity %d GiB, memory %.0f GB/s, FP16 %.0f TFLOPS\n",
		p.Capacity/device.GiB, p.HBMBandwidth/device.GBps, p.FP16/device.TFLOPS)
	_, err = device.Open("gpu:0")
	fmt.Println(err != nil)
	// Output:
	// sim:1 NVIDIA T4 (Turing, 16 GB GDDR6, PCIe 3.0 x16)
	// capacity 16 GiB, memory 320 GB/s, FP16 65 TFLOPS
	// true
}

// Device memory on sim is real: the block's bytes are there to read.
func ExampleDevice_Bytes() {
	d := device.Default()
	s := d.DefaultStream()
	b, _ := d.Malloc(5, s)
	defer d.Free(b)
	_ = d.CopyToDevice(b, 0, []byte("hello"), false, s, false)
	fmt.Printf("%d bytes requested, %d reserved, %q\n", b.Requested(), len(d.Bytes(b)), d.Bytes(b)[:5])
	// Output: 5 bytes requested, 512 reserved, "hello"
}

// Pageable memory makes a copy synchronous and slow; pinned memory lets it
// run in the background.
func ExampleDevice_CopyToDevice() {
	t4, _ := device.LookupProfile("t4")
	d := device.MustOpen("sim:1", device.WithProfile(t4))
	const n = 64 << 20 // 64 MiB
	b, _ := d.Malloc(n, 0)
	defer d.Free(b)
	s := d.NewStream()
	for _, pinned := range []bool{false, true} {
		h, _ := d.HostAlloc(n, pinned)
		d.Synchronize()
		start := d.RecordEvent(s)
		t0 := d.Now()
		_ = d.CopyToDevice(b, 0, h.Bytes, pinned, s, true) // async requested
		host := d.Now() - t0
		end := d.RecordEvent(s)
		end.Synchronize()
		fmt.Printf("pinned=%-5v host blocked %v, copy took %v\n", pinned, host, end.ElapsedSince(start))
		h.Free()
	}
	// Output:
	// pinned=false host blocked 13.320251ms, copy took 13.320251ms
	// pinned=true  host blocked 5µs, copy took 5.3311ms
}

// Meta devices do the accounting without the bytes.
func ExampleOpen_meta() {
	d := device.MustOpen("meta:0") // an H100 80GB by default
	params := int64(13_000_000_000)
	weights, _ := d.Malloc(params*2, 0) // fp16
	grads, _ := d.Malloc(params*2, 0)
	_, err := d.Malloc(params*8, 0) // Adam's two fp32 moments
	fmt.Printf("%s: %.1f GiB allocated, bytes %v\n", d.Profile().Name, float64(d.MemoryAllocated())/float64(device.GiB), d.Bytes(weights) == nil)
	fmt.Println("Adam states fit:", err == nil)
	d.Free(weights)
	d.Free(grads)
	// Output:
	// h100-80gb: 48.4 GiB allocated, bytes true
	// Adam states fit: false
}

// A cached allocation is free; a raw cudaMalloc is not, and EmptyCache pays
// a device synchronization for every segment it returns.
func ExampleDevice_EmptyCache() {
	d := device.MustOpen("meta:1")
	t0 := d.Now()
	b, _ := d.Malloc(1<<30, 0)
	fmt.Println("first malloc (cudaMalloc):", d.Now()-t0)
	d.Free(b)
	t1 := d.Now()
	b, _ = d.Malloc(1<<30, 0)
	fmt.Println("second malloc (cached):", d.Now()-t1)
	d.Free(b)
	d.Launch(0, device.Kernel{Name: "matmul", Flops: 989e10, Half: true}) // 10 ms
	t2 := d.Now()
	d.EmptyCache()
	fmt.Println("EmptyCache:", d.Now()-t2)
	// Output:
	// first malloc (cudaMalloc): 60µs
	// second malloc (cached): 0s
	// EmptyCache: 10.015ms
}

// A made-up small card makes out-of-memory errors happen at sizes a test
// chooses. Resized drops the real card's context, so all of the memory is
// the allocator's; shrinking Capacity alone would leave a 128 MiB context
// on a 64 MiB card, which sim.New refuses.
func ExampleProfile_Resized() {
	classroom, _ := device.LookupProfile("classroom")
	small := classroom.Resized(64 * device.MiB)
	fmt.Println(classroom.ContextSize/device.MiB, "MiB of context on the classroom card,", small.ContextSize, "on the small one")
	d, err := device.New(sim.New(0, small))
	if err != nil {
		panic(err)
	}
	free, total := d.MemInfo()
	fmt.Println(free/device.MiB, "of", total/device.MiB, "MiB free")
	_, err = d.Malloc(65*device.MiB, d.DefaultStream())
	fmt.Println(err != nil)
	// Output:
	// 128 MiB of context on the classroom card, 0 on the small one
	// 64 of 64 MiB free
	// true
}
