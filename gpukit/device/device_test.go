package device_test

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/device/simtest"
)

// Registry use in this package: the examples own sim:0, sim:1, meta:0 and
// meta:1;
// each test below uses its own indices.

func mustProfile(t testing.TB, name string) device.Profile {
	t.Helper()
	p, err := device.LookupProfile(name)
	require.NoError(t, err)
	return p
}

// fresh returns an unregistered sim device.
func fresh(t testing.TB, profile string) *device.Device {
	t.Helper()
	return simtest.Card(t, simtest.Profile(profile))
}

func TestParseName(t *testing.T) {
	tests := []struct {
		name  string
		kind  device.Kind
		index int
		ok    bool
	}{
		{"sim:0", device.Sim, 0, true},
		{"sim:15", device.Sim, 15, true},
		{"meta:3", device.Meta, 3, true},
		{"cuda:0", device.CUDA, 0, true},
		{"cuda:17", device.CUDA, 17, true},
		{"SIM:2", device.Sim, 2, true},
		{" sim ", device.Sim, 0, true},
		{"sim:16", 0, 0, false},
		{"sim:-1", 0, 0, false},
		{"sim:x", 0, 0, false},
		{"sim:", 0, 0, false},
		{"gpu:0", 0, 0, false},
		{"", 0, 0, false},
		{"cuda0", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, index, err := device.ParseName(tt.name)
			if !tt.ok {
				require.Error(t, err)
				assert.Contains(t, err.Error(), `"sim:N"`)
				assert.Contains(t, err.Error(), `"cuda:N"`)
				_, err = device.Open(tt.name)
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.kind, kind)
			assert.Equal(t, tt.index, index)
		})
	}
}

func TestRegistry(t *testing.T) {
	a, err := device.Open("sim:2")
	require.NoError(t, err)
	b, err := device.Open("SIM:02")
	require.NoError(t, err)
	assert.Same(t, a, b)
	assert.Equal(t, "sim:2", a.Name())
	assert.Equal(t, 2, a.Index())
	assert.Equal(t, device.Sim, a.Kind())
	assert.Equal(t, "sim", a.Kind().String())
	assert.NotNil(t, a.Allocator())
	assert.Equal(t, a.Profile(), a.Backend().Profile())

	c, err := device.Open("sim:2", device.WithProfile(a.Profile()))
	require.NoError(t, err, "same options are fine")
	assert.Same(t, a, c)
	_, err = device.Open("sim:2", device.WithProfile(mustProfile(t, "h100-80gb")))
	require.ErrorContains(t, err, "already open")
	_, err = device.Open("sim:2", device.WithAllocConfig(alloc.Config{MaxSplitSize: 64 << 20}))
	require.ErrorContains(t, err, "already open")

	m, err := device.Open("meta:2")
	require.NoError(t, err)
	assert.NotSame(t, a, m)
	assert.Equal(t, device.DefaultMetaProfile, m.Profile().Name)

	// Concurrent opens of one name agree.
	var wg sync.WaitGroup
	got := make([]*device.Device, 8)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = device.MustOpen("sim:12") }()
	}
	wg.Wait()
	for _, d := range got {
		assert.Same(t, got[0], d)
	}
}

func TestProfileFromEnv(t *testing.T) {
	t.Cleanup(func() {
		device.ForgetForTest("sim:3")
		device.ForgetForTest("sim:4")
	})
	t.Setenv(device.ProfileEnvVar, "a100-40gb")
	d, err := device.Open("sim:3")
	require.NoError(t, err)
	assert.Equal(t, "a100-40gb", d.Profile().Name)
	t.Setenv(device.ProfileEnvVar, "nope")
	_, err = device.Open("sim:4")
	require.ErrorContains(t, err, device.ProfileEnvVar)
	t.Setenv(device.ProfileEnvVar, "")
	t.Setenv(alloc.EnvVar, "max_split_size_mb:banana")
	_, err = device.Open("sim:4")
	require.Error(t, err)
	t.Setenv(alloc.EnvVar, "max_split_size_mb:64")
	d, err = device.Open("sim:4")
	require.NoError(t, err)
	assert.Equal(t, "classroom", d.Profile().Name)
	assert.Equal(t, int64(64<<20), d.AllocConfig().MaxSplitSize)
}

func TestCUDAWithoutTag(t *testing.T) {
	_, err := device.Open("cuda:0")
	if err == nil {
		t.Skip("built with the cuda backend")
	}
	assert.Contains(t, err.Error(), "-tags cuda")
	assert.Contains(t, err.Error(), "NVIDIA GPU")
}

func TestProfiles(t *testing.T) {
	ps := device.Profiles()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	assert.Equal(t, []string{"classroom", "t4", "a100-40gb", "h100-80gb"}, names)
	_, err := device.LookupProfile("v100")
	require.ErrorContains(t, err, "device: unknown profile")
	bad := mustProfile(t, "t4")
	bad.Capacity = 0
	_, err = device.Open("sim:5", device.WithProfile(bad))
	require.ErrorContains(t, err, "capacity")
}

func TestBytesRoundTrip(t *testing.T) {
	d := fresh(t, "classroom")
	s := d.DefaultStream()
	for _, size := range []int64{1, 100, 512, 4097, 1 << 20, 3 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			b, err := d.Malloc(size, s)
			require.NoError(t, err)
			defer d.Free(b)
			assert.Len(t, d.Bytes(b), int(b.Size()))
			assert.Equal(t, size, b.Requested())
			src := make([]byte, size)
			for i := range src {
				src[i] = byte(i*7 + 3)
			}
			require.NoError(t, d.CopyToDevice(b, 0, src, true, s, true))
			assert.Equal(t, src, d.Bytes(b)[:size], "the block's bytes are the device memory")
			dst := make([]byte, size)
			require.NoError(t, d.CopyToHost(dst, b, 0, false, s, false))
			assert.Equal(t, src, dst)
			// Writes through Bytes are seen by copies.
			d.Bytes(b)[0] = 42
			one := make([]byte, 1)
			require.NoError(t, d.CopyToHost(one, b, 0, true, s, false))
			assert.Equal(t, byte(42), one[0])
		})
	}
}

func TestCopyErrors(t *testing.T) {
	d := fresh(t, "classroom")
	b, err := d.Malloc(1000, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1024), b.Size())
	require.ErrorContains(t, d.CopyToDevice(b, 1000, make([]byte, 25), true, 0, false), "outside the block")
	require.ErrorContains(t, d.CopyToDevice(b, -1, make([]byte, 1), true, 0, false), "outside the block")
	require.ErrorContains(t, d.CopyToHost(make([]byte, 2000), b, 0, true, 0, false), "outside the block")
	require.ErrorContains(t, d.CopyDevice(b, 0, b, 512, 1000, 0), "outside the block")
	require.ErrorContains(t, d.CopyToDevice(nil, 0, nil, true, 0, false), "nil block")
	other := simtest.Card(t, simtest.Index(1))
	ob, err := other.Malloc(1<<20, 0)
	require.NoError(t, err)
	require.ErrorContains(t, d.CopyToDevice(ob, 0, make([]byte, 1<<20), true, 0, false), "is on sim:1, not on this device")
	d.Free(b)
	require.ErrorContains(t, d.CopyToHost(make([]byte, 8), b, 0, true, 0, false), "was freed")
	require.ErrorContains(t, other.CopyDevice(ob, 0, b, 0, 8, 0), "was freed")
}

// Devices made with New may use the same addresses as another device of the
// same index; copies must still read and write the right memory.
func TestCopiesBetweenDevicesWithTheSameAddresses(t *testing.T) {
	a, b := simtest.Card(t), simtest.Card(t)
	ba, err := a.Malloc(4096, 0)
	require.NoError(t, err)
	bb, err := b.Malloc(4096, 0)
	require.NoError(t, err)
	require.Equal(t, ba.Addr(), bb.Addr(), "the two devices hand out the same address")
	require.NoError(t, a.CopyToDevice(ba, 0, []byte{1, 2, 3}, true, 0, false))
	require.NoError(t, b.CopyToDevice(bb, 0, []byte{7, 8, 9}, true, 0, false))
	require.NoError(t, b.CopyDevice(bb, 100, ba, 0, 3, 0)) // a → b, queued on b
	got := make([]byte, 3)
	require.NoError(t, b.CopyToHost(got, bb, 100, true, 0, false))
	assert.Equal(t, []byte{1, 2, 3}, got, "b received a's bytes")
	require.NoError(t, a.CopyToHost(got, ba, 0, true, 0, false))
	assert.Equal(t, []byte{1, 2, 3}, got, "a is unchanged")
	require.ErrorContains(t, a.CopyToDevice(bb, 0, []byte{0}, true, 0, false), "not on this device")
}

func TestMeta(t *testing.T) {
	d, err := device.Open("meta:4")
	require.NoError(t, err)
	assert.Equal(t, device.Meta, d.Kind())
	assert.Equal(t, int64(80*device.GiB), d.Profile().Capacity)
	// Sixty 1 GiB tensors: accounting only.
	var blocks []*alloc.Block
	for range 60 {
		b, err := d.Malloc(device.GiB, 0)
		require.NoError(t, err)
		assert.Nil(t, d.Bytes(b))
		blocks = append(blocks, b)
	}
	assert.Equal(t, 60*device.GiB, d.MemoryAllocated())
	free, total := d.MemInfo()
	assert.Equal(t, 80*device.GiB, total)
	assert.Equal(t, 80*device.GiB-d.Profile().ContextSize-d.MemoryReserved(), free)
	_, err = d.Malloc(30*device.GiB, 0)
	var oom *alloc.OutOfMemoryError
	require.ErrorAs(t, err, &oom)
	// Copies keep the clocks and move nothing.
	t0 := d.Now()
	require.NoError(t, d.CopyToDevice(blocks[0], 0, make([]byte, 1<<20), false, 0, true))
	assert.Equal(t, d.Profile().CopyCost(1<<20, false), d.Now()-t0)
	for _, b := range blocks {
		d.Free(b)
	}
	assert.Zero(t, d.MemoryAllocated())
	d.EmptyCache()
	assert.Zero(t, d.MemoryReserved())
}

func TestOOM(t *testing.T) {
	d := fresh(t, "classroom")
	context := d.Profile().ContextSize
	_, err := d.Malloc(3*device.GiB, 0)
	var oom *alloc.OutOfMemoryError
	require.ErrorAs(t, err, &oom)
	_, err = d.Malloc(2*device.GiB, 0)
	require.ErrorAs(t, err, &oom, "the context is not yours: the whole card is too much")
	b, err := d.Malloc(2*device.GiB-context, 0)
	require.NoError(t, err, "the whole card but its context")
	_, err = d.Malloc(1, 0)
	require.ErrorAs(t, err, &oom)
	d.Free(b)
}

// TestHugeMalloc: dev.Malloc(math.MaxInt64, stream) once "succeeded" with
// 2 MiB (issue 8); it is PyTorch's out-of-memory error, twice.
func TestHugeMalloc(t *testing.T) {
	d := fresh(t, "classroom")
	s := d.DefaultStream()
	for range 2 {
		b, err := d.Malloc(math.MaxInt64, s)
		var oom *alloc.OutOfMemoryError
		require.ErrorAs(t, err, &oom)
		assert.Nil(t, b)
	}
	st := d.Stats()
	assert.Zero(t, st["allocated_bytes.all.current"])
	assert.Zero(t, st["requested_bytes.all.current"])
	assert.Zero(t, st["reserved_bytes.all.current"])
	assert.Equal(t, int64(2), st["num_ooms"])
}

// TestContextSize: a card is not all yours. Each built-in profile loses its
// context before the first tensor; MemInfo, the allocator's reach and the
// out-of-memory message all account for it.
func TestContextSize(t *testing.T) {
	for _, p := range device.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			assert.Positive(t, p.ContextSize)
			assert.Less(t, p.ContextSize, p.Capacity/8)
			assert.NotEmpty(t, p.ContextSource)
			d, err := device.New(sim.NewMeta(0, p))
			require.NoError(t, err)
			free, total := d.MemInfo()
			assert.Equal(t, p.Capacity, total)
			assert.Equal(t, p.Capacity-p.ContextSize, free, "free before the first tensor")
			usable := (p.Capacity - p.ContextSize) &^ (2*device.MiB - 1) // segments of large requests are 2 MiB multiples
			b, err := d.Malloc(usable, 0)
			require.NoError(t, err)
			free, _ = d.MemInfo()
			assert.Equal(t, p.Capacity-p.ContextSize-usable, free)
			_, err = d.Malloc(free+1, 0)
			var oom *alloc.OutOfMemoryError
			require.ErrorAs(t, err, &oom)
			assert.Equal(t, p.Capacity-p.ContextSize-usable, oom.DeviceFree)
			assert.True(t, oom.ProcessUsedKnown)
			assert.Equal(t, p.ContextSize+usable, oom.ProcessUsed)
			assert.Equal(t, p.ContextSize, oom.NonPyTorch(), "the context is non-PyTorch memory")
			d.Free(b)
		})
	}
}

// TestOOMMessageOnClassroom: the message's fields on the classroom profile,
// whose 128 MiB context shows as non-PyTorch memory of this process.
func TestOOMMessageOnClassroom(t *testing.T) {
	d := fresh(t, "classroom")
	require.Equal(t, 128*device.MiB, d.Profile().ContextSize)
	var blocks []*alloc.Block
	for range 18 {
		b, err := d.Malloc(100*device.MiB, 0)
		require.NoError(t, err)
		blocks = append(blocks, b)
	}
	small, err := d.Malloc(4000, 0) // one 2 MiB small-pool segment
	require.NoError(t, err)
	_, err = d.Malloc(300*device.MiB, 0)
	var oom *alloc.OutOfMemoryError
	require.ErrorAs(t, err, &oom)
	assert.Equal(t, "alloc: out of memory. Tried to allocate 300.00 MiB. GPU 0 has a total capacity of 2.00 GiB of which 118.00 MiB is free. "+
		"Including non-PyTorch memory, this process has 1.88 GiB memory in use. "+
		"Of the allocated memory 1.76 GiB is allocated by PyTorch, and 2.00 MiB is reserved by PyTorch but unallocated. "+
		"If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.", err.Error())
	assert.Equal(t, 128*device.MiB, oom.NonPyTorch())
	require.NoError(t, d.SetMemoryFraction(0.5))
	_, err = d.Malloc(300*device.MiB, 0)
	require.ErrorAs(t, err, &oom)
	assert.Contains(t, err.Error(), "this process has 1.88 GiB memory in use. 1024.00 MiB allowed; Of the allocated memory")
	for _, b := range append(blocks, small) {
		d.Free(b)
	}
}

func TestCachedMallocIsFree(t *testing.T) {
	d := fresh(t, "t4")
	p := d.Profile()
	t0 := d.Now()
	b, err := d.Malloc(100<<20, 0) // raw malloc of a 100 MiB segment
	require.NoError(t, err)
	assert.Equal(t, p.MallocCost(100<<20), d.Now()-t0)
	d.Free(b)
	t1 := d.Now()
	b, err = d.Malloc(100<<20, 0) // from the cache
	require.NoError(t, err)
	assert.Equal(t, t1, d.Now(), "a cached allocation costs no device time")
	d.Free(b)

	// EmptyCache: a raw free synchronizes the device, waiting for queued work.
	d.Launch(0, device.Kernel{Name: "slow", Bytes: 3_200_000_000}) // 10 ms
	t2 := d.Now()
	d.EmptyCache()
	assert.Equal(t, 10*time.Millisecond+p.FreeLatency, d.Now()-t2)
}

func TestClocksAndEvents(t *testing.T) {
	// A t4 whose PCIe carries a thousandth of its bytes per second: the
	// copies take a t4's 10 ms pinned and 25 ms pageable with 126 kB
	// instead of 126 MB, which the race detector would shadow (minutes).
	slow := mustProfile(t, "t4")
	slow.PCIePinned /= 1000
	slow.PCIePageable /= 1000
	d, err := device.New(sim.New(0, slow))
	require.NoError(t, err)
	p := d.Profile()
	const n = 126_000 // 10 ms pinned, 25 ms pageable
	b, err := d.Malloc(n, 0)
	require.NoError(t, err)
	h, err := d.HostAlloc(n, true)
	require.NoError(t, err)
	defer h.Free()
	tests := []struct {
		name          string
		pinned, async bool
		host          time.Duration
	}{
		{"pinned async returns at once", true, true, p.LaunchOverhead},
		{"pinned sync waits", true, false, 10*time.Millisecond + p.LaunchOverhead},
		{"pageable sync waits longer", false, false, 25*time.Millisecond + p.LaunchOverhead},
		{"pageable async is not asynchronous", false, true, 25*time.Millisecond + p.LaunchOverhead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := d.NewStream()
			d.Synchronize()
			start := d.RecordEvent(s)
			t0 := d.Now()
			require.NoError(t, d.CopyToDevice(b, 0, h.Bytes, tt.pinned, s, tt.async))
			assert.Equal(t, tt.host, d.Now()-t0)
			end := d.RecordEvent(s)
			assert.Equal(t, !tt.async || !tt.pinned, end.Query())
			end.Synchronize()
			assert.True(t, end.Query())
			want := 10 * time.Millisecond
			if !tt.pinned {
				want = 25 * time.Millisecond
			}
			assert.Equal(t, want+p.LaunchOverhead, end.ElapsedSince(start))
		})
	}

	t.Run("copy overlaps compute on another stream", func(t *testing.T) {
		copyS, computeS := d.NewStream(), d.NewStream()
		d.Synchronize()
		t0 := d.Now()
		require.NoError(t, d.CopyToDevice(b, 0, h.Bytes, true, copyS, true))
		d.Launch(computeS, device.Kernel{Name: "matmul", Flops: 81_000_000_000}) // 10 ms FP32
		d.Synchronize()
		assert.Equal(t, 10*time.Millisecond+2*p.LaunchOverhead, d.Now()-t0)
	})
	t.Run("same stream serializes", func(t *testing.T) {
		s := d.NewStream()
		d.Synchronize()
		t0 := d.Now()
		require.NoError(t, d.CopyToDevice(b, 0, h.Bytes, true, s, true))
		d.Launch(s, device.Kernel{Flops: 81_000_000_000})
		d.StreamSynchronize(s)
		assert.Equal(t, 20*time.Millisecond+2*p.LaunchOverhead, d.Now()-t0)
	})
	t.Run("half precision uses the FP16 rate", func(t *testing.T) {
		s := d.NewStream()
		d.Synchronize()
		t0 := d.StreamClock(s)
		d.Launch(s, device.Kernel{Flops: 650_000_000_000, Half: true})
		assert.Equal(t, 10*time.Millisecond+p.LaunchOverhead, d.StreamClock(s)-max(t0, d.Now()-p.LaunchOverhead))
	})
	t.Run("wait event", func(t *testing.T) {
		s1, s2 := d.NewStream(), d.NewStream()
		d.Launch(s1, device.Kernel{Flops: 81_000_000_000})
		e := d.RecordEvent(s1)
		d.WaitEvent(s2, e)
		d.Launch(s2, device.Kernel{})
		assert.Equal(t, d.StreamClock(s1)+p.LaunchOverhead, d.StreamClock(s2))
		assert.False(t, e.Query())
		assert.False(t, e.Query())
		d.StreamSynchronize(s2)
		assert.True(t, e.Query())
	})
	d.Free(b)
}

func TestTwoDevices(t *testing.T) {
	d0 := device.MustOpen("sim:6", device.WithProfile(mustProfile(t, "t4")))
	d1 := device.MustOpen("sim:7", device.WithProfile(mustProfile(t, "t4")))
	p := d0.Profile()
	x, err := d0.Malloc(1<<20, 0)
	require.NoError(t, err)
	y, err := d1.Malloc(1<<20, 0)
	require.NoError(t, err)
	assert.NotEqual(t, x.Addr(), y.Addr())
	copy(d0.Bytes(x), "from sim:6")
	t0, t1 := d0.Now(), d1.Now()
	require.NoError(t, d1.CopyDevice(y, 0, x, 0, 1<<20, 0))
	assert.Equal(t, "from sim:6", string(d1.Bytes(y)[:10]))
	assert.Equal(t, t0, d0.Now(), "sim:6's clock is independent")
	assert.Equal(t, p.LaunchOverhead, d1.Now()-t1)
	assert.Equal(t, max(t1, d1.StreamClock(0)-p.PeerCopyCost(1<<20)), t1)
	d1.Synchronize()
	assert.Equal(t, p.PeerCopyCost(1<<20), d1.Now()-t1)
	// And back, through d0's stream.
	copy(d1.Bytes(y), "back")
	require.NoError(t, d0.CopyDevice(x, 0, y, 0, 4, 0))
	assert.Equal(t, "back", string(d0.Bytes(x)[:4]))
	// Allocators are separate.
	assert.Equal(t, int64(1<<20), d0.MemoryAllocated())
	assert.Equal(t, int64(1<<20), d1.MemoryAllocated())
	d0.Free(x)
	d1.Free(y)
	// Errors name the device the block is on.
	z, err := d1.Malloc(512, 0)
	require.NoError(t, err)
	require.ErrorContains(t, d0.CopyToDevice(z, 0, []byte{1}, true, 0, false), "sim:7")
	d1.Free(z)
}

func TestPassThroughs(t *testing.T) {
	d := fresh(t, "classroom")
	b, err := d.Malloc(3<<20, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(3<<20), d.MemoryAllocated())
	assert.Equal(t, int64(20<<20), d.MemoryReserved())
	assert.Equal(t, int64(3<<20), d.Stats()["allocated_bytes.all.current"])
	assert.NotEmpty(t, d.Summary())
	assert.Len(t, d.Snapshot().Segments, 1)
	s := d.NewStream()
	d.RecordStream(b, s)
	d.Free(b)
	d.ResetPeakStats()
	assert.Equal(t, int64(0), d.MaxMemoryAllocated())
	assert.Equal(t, int64(20<<20), d.MaxMemoryReserved())
	require.NoError(t, d.SetMemoryFraction(0.5))
	require.Error(t, d.SetMemoryFraction(2))
	d.EmptyCache()
	assert.Zero(t, d.MemoryReserved())
	assert.Contains(t, d.String(), "classroom")
}

func TestDeterminism(t *testing.T) {
	run := func() (addrs []uint64, now time.Duration) {
		d := fresh(t, "t4")
		s := d.NewStream()
		var live []*alloc.Block
		// Sizes up to 8 MiB reach both pools and every rounding rule;
		// larger ones would add only real bytes for the race detector
		// to shadow.
		for i := range 200 {
			b, err := d.Malloc(int64(i*i*997%(8<<20)+1), alloc.Stream(i%2)*s)
			require.NoError(t, err)
			addrs = append(addrs, b.Addr())
			live = append(live, b)
			d.Launch(s, device.Kernel{Flops: int64(i) * 1e9})
			if i%5 == 4 {
				d.Free(live[0])
				live = live[1:]
			}
			if i%50 == 49 {
				d.EmptyCache()
			}
		}
		return addrs, d.Now()
	}
	a1, n1 := run()
	a2, n2 := run()
	assert.Equal(t, a1, a2)
	assert.Equal(t, n1, n2)
}

func TestConcurrentDevice(t *testing.T) {
	d := fresh(t, "classroom")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := d.NewStream()
			for i := range 200 {
				b, err := d.Malloc(int64(1+(g*1000+i*4099)%(4<<20)), s)
				if err != nil {
					t.Error(err)
					return
				}
				v := []byte{byte(g), byte(i)}
				if err := d.CopyToDevice(b, 0, v, true, s, true); err != nil {
					t.Error(err)
				}
				out := make([]byte, 2)
				if err := d.CopyToHost(out, b, 0, true, s, false); err != nil {
					t.Error(err)
				}
				if out[0] != v[0] || out[1] != v[1] {
					t.Errorf("goroutine %d: read %v, wrote %v", g, out, v)
				}
				e := d.RecordEvent(s)
				e.Query()
				d.Launch(s, device.Kernel{Bytes: 1 << 20})
				d.Free(b)
				if i%50 == 0 {
					d.EmptyCache()
					d.Stats()
					d.MemInfo()
				}
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, d.MemoryAllocated())
}

func TestNew(t *testing.T) {
	_, err := device.New(sim.New(0, mustProfile(t, "t4")), device.WithProfile(mustProfile(t, "t4")))
	require.Error(t, err)
	d, err := device.New(sim.NewMeta(1, mustProfile(t, "t4")), device.WithAllocConfig(alloc.Config{MaxSplitSize: 40 << 20}))
	require.NoError(t, err)
	assert.Equal(t, "meta:1", d.Name())
	assert.Equal(t, int64(40<<20), d.AllocConfig().MaxSplitSize)
	_, err = device.New(sim.New(0, mustProfile(t, "t4")), device.WithAllocConfig(alloc.Config{MaxSplitSize: 1}))
	require.Error(t, err)
	assert.True(t, errors.Is(err, err))
}

// TestDefaultFromEnvironment: GPUKIT_DEVICE chooses what Default returns,
// so that lessons and tests that use the default device run on cuda:0
// (scripts/gpu-check.sh) without a change.
func TestDefaultFromEnvironment(t *testing.T) {
	t.Setenv(device.DeviceEnvVar, " sim:3 ")
	assert.Equal(t, "sim:3", device.Default().Name())
	assert.Same(t, device.MustOpen("sim:3"), device.Default())

	t.Setenv(device.DeviceEnvVar, "")
	assert.Equal(t, "sim:0", device.Default().Name())

	t.Setenv(device.DeviceEnvVar, "gpu:0")
	assert.PanicsWithError(t, `device: invalid device name "gpu:0"; valid forms are "sim:N" and "meta:N" with N in 0..15, and "cuda:N" (e.g. "sim:0", "meta:0", "cuda:0") (from GPUKIT_DEVICE)`, func() { device.Default() })
}
