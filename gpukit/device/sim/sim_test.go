package sim

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device/profile"
)

func lookup(t testing.TB, name string) profile.Profile {
	t.Helper()
	p, err := profile.LookupProfile(name)
	require.NoError(t, err)
	return p
}

func small(capacity int64) profile.Profile {
	p, _ := profile.LookupProfile("classroom")
	p = p.Resized(capacity) // exactly capacity bytes for segments
	p.Name = "test"
	return p
}

func TestAddresses(t *testing.T) {
	tests := []struct {
		name  string
		index int
		meta  bool
		sizes []int64
		want  []uint64
	}{
		{"sim0", 0, false, []int64{1, 512, 513, 2 << 20}, []uint64{0x7f0000000000, 0x7f0000000200, 0x7f0000000400, 0x7f0000000800}},
		{"sim1", 1, false, []int64{100, 100}, []uint64{0x7f0000000000 + 1<<44, 0x7f0000000000 + 1<<44 + 512}},
		{"meta0", 0, true, []int64{1000}, []uint64{0x7f0000000000 + 16<<44}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b *Backend
			if tt.meta {
				b = NewMeta(tt.index, small(1<<30))
			} else {
				b = New(tt.index, small(1<<30))
			}
			for i, size := range tt.sizes {
				addr, err := b.Malloc(size)
				require.NoError(t, err)
				assert.Equal(t, tt.want[i], addr, "segment %d", i)
				assert.Zero(t, addr%Alignment)
			}
		})
	}
}

func TestAddressesNeverReusedAndDeterministic(t *testing.T) {
	run := func() []uint64 {
		b := New(0, small(1<<20))
		var out []uint64
		for i := range 50 {
			a, err := b.Malloc(int64(1000 + i*37))
			require.NoError(t, err)
			out = append(out, a)
			if i%3 == 0 {
				require.NoError(t, b.Free(a))
			}
		}
		return out
	}
	a, b := run(), run()
	assert.Equal(t, a, b)
	for i := 1; i < len(a); i++ {
		assert.Greater(t, a[i], a[i-1])
	}
}

func TestCapacity(t *testing.T) {
	b := New(0, small(10_000))
	a1, err := b.Malloc(6000)
	require.NoError(t, err)
	_, err = b.Malloc(4001)
	require.ErrorIs(t, err, alloc.ErrDeviceFull)
	a2, err := b.Malloc(4000) // exactly fits
	require.NoError(t, err)
	free, total := b.MemInfo()
	assert.Equal(t, int64(0), free)
	assert.Equal(t, int64(10_000), total)
	_, err = b.Malloc(1)
	require.ErrorIs(t, err, alloc.ErrDeviceFull)
	require.NoError(t, b.Free(a1))
	assert.Equal(t, int64(6000), b.FreeBytes())
	_, err = b.Malloc(6000)
	require.NoError(t, err)
	require.Error(t, b.Free(a1), "double free")
	require.Error(t, b.Free(a2+512), "interior address")
	_, err = b.Malloc(0)
	require.Error(t, err)
}

func TestBytes(t *testing.T) {
	b := New(0, small(1<<20))
	a, err := b.Malloc(4096)
	require.NoError(t, err)
	buf := b.Bytes(a+100, 10)
	require.Len(t, buf, 10)
	assert.Equal(t, 10, cap(buf))
	copy(buf, "0123456789")
	out := make([]byte, 10)
	require.NoError(t, b.CopyDtoH(out, a+100, true, 0, false))
	assert.Equal(t, "0123456789", string(out))
	assert.Nil(t, b.Bytes(a+4000, 100), "past the segment")
	assert.Nil(t, b.Bytes(a-1, 1), "before the segment")
	require.NoError(t, b.Free(a))
	assert.Nil(t, b.Bytes(a, 1), "freed")
	assert.False(t, b.Owns(a, 1))

	m := NewMeta(0, small(1<<20))
	a, err = m.Malloc(4096)
	require.NoError(t, err)
	assert.True(t, m.Owns(a, 4096))
	assert.Nil(t, m.Bytes(a, 4096))
}

func TestMallocAndFreeCost(t *testing.T) {
	p := lookup(t, "t4")
	// A meta card pays what a sim card pays, without a GiB of real bytes
	// (which the race detector shadows for a minute and more).
	b := NewMeta(0, p)
	a, err := b.Malloc(profile.GiB)
	require.NoError(t, err)
	assert.Equal(t, p.MallocLatency+p.MallocPerGiB, b.Now())
	assert.Equal(t, 60*time.Microsecond, b.Now())

	// A raw free synchronizes the device: the host waits for queued work.
	b.Launch(0, profile.Kernel{Bytes: 320_000_000}) // 1 ms of memory traffic
	before := b.Now()
	require.NoError(t, b.Free(a))
	assert.Equal(t, before+time.Millisecond+p.FreeLatency, b.Now(), "kernel end + free latency")
}

func TestKernelCost(t *testing.T) {
	p := lookup(t, "a100-40gb")
	tests := []struct {
		name string
		k    profile.Kernel
		want time.Duration
	}{
		{"empty", profile.Kernel{}, 5 * time.Microsecond},
		{"compute bound fp32", profile.Kernel{Flops: 19_500_000_000, Bytes: 1}, time.Second/1000 + 5*time.Microsecond},
		{"compute bound fp16", profile.Kernel{Flops: 312_000_000_000, Half: true}, time.Second/1000 + 5*time.Microsecond},
		{"memory bound", profile.Kernel{Flops: 1, Bytes: 1_555_000_000}, time.Second/1000 + 5*time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, p.KernelCost(tt.k))
			b := New(0, p)
			b.Launch(0, tt.k)
			assert.Equal(t, p.LaunchOverhead, b.Now(), "launch is asynchronous")
			assert.Equal(t, tt.want, b.StreamClock(0))
			b.Synchronize()
			assert.Equal(t, tt.want, b.Now())
		})
	}
}

// slowPCIe is a t4 whose PCIe carries a thousandth of its bytes per
// second: its copies take a t4's times with a thousandth of the bytes
// (126 kB for a t4's 10 ms pinned, 25 ms pageable), which keeps the race
// detector from shadowing hundreds of megabytes.
func slowPCIe(t *testing.T) profile.Profile {
	p := lookup(t, "t4")
	p.PCIePinned /= 1000
	p.PCIePageable /= 1000
	return p
}

func TestCopyClocks(t *testing.T) {
	p := slowPCIe(t)
	const n = 126_000 // 10 ms pinned, 25 ms pageable
	pinned := p.CopyCost(n, true)
	pageable := p.CopyCost(n, false)
	require.Equal(t, 10*time.Millisecond+p.LaunchOverhead, pinned)
	require.Equal(t, 25*time.Millisecond+p.LaunchOverhead, pageable)
	tests := []struct {
		name           string
		pinned, async  bool
		host, streamAt time.Duration
	}{
		{"pinned async", true, true, p.LaunchOverhead, pinned},
		{"pinned sync", true, false, pinned, pinned},
		{"pageable sync", false, false, pageable, pageable},
		{"pageable async is synchronous", false, true, pageable, pageable},
	}
	for _, tt := range tests {
		for _, dir := range []string{"HtoD", "DtoH"} {
			t.Run(tt.name+" "+dir, func(t *testing.T) {
				b := New(0, p)
				a, err := b.Malloc(n)
				require.NoError(t, err)
				t0 := b.Now()
				s := b.NewStream()
				buf := make([]byte, n)
				if dir == "HtoD" {
					require.NoError(t, b.CopyHtoD(a, buf, tt.pinned, s, tt.async))
				} else {
					require.NoError(t, b.CopyDtoH(buf, a, tt.pinned, s, tt.async))
				}
				assert.Equal(t, tt.host, b.Now()-t0, "host clock")
				assert.Equal(t, tt.streamAt, b.StreamClock(s)-t0, "stream clock")
			})
		}
	}
}

func TestOverlapAndEvents(t *testing.T) {
	p := slowPCIe(t)
	b := New(0, p)
	a, err := b.Malloc(126_000)
	require.NoError(t, err)
	t0 := b.Now()
	copyS, computeS := b.NewStream(), b.NewStream()
	assert.NotEqual(t, copyS, computeS)
	start := b.RecordEvent(computeS).(*Event)
	// 10 ms pinned copy on one stream, 10 ms kernel on the other.
	require.NoError(t, b.CopyHtoD(a, make([]byte, 126_000), true, copyS, true))
	b.Launch(computeS, profile.Kernel{Flops: 81_000_000_000})
	end := b.RecordEvent(computeS).(*Event)
	assert.False(t, end.Query())
	b.Synchronize()
	assert.True(t, end.Query())
	total := b.Now() - t0
	// Overlapped: about 10 ms, not 20.
	assert.Equal(t, 10*time.Millisecond+2*p.LaunchOverhead, total)
	assert.Equal(t, 10*time.Millisecond+p.LaunchOverhead*2, end.ElapsedSince(start))

	// Same stream: serialized.
	t1 := b.Now()
	require.NoError(t, b.CopyHtoD(a, make([]byte, 126_000), true, copyS, true))
	b.Launch(copyS, profile.Kernel{Flops: 81_000_000_000})
	b.StreamSynchronize(copyS)
	assert.Equal(t, 20*time.Millisecond+2*p.LaunchOverhead, b.Now()-t1)
}

func TestWaitEvent(t *testing.T) {
	p := lookup(t, "t4")
	b := New(0, p)
	s1, s2 := b.NewStream(), b.NewStream()
	b.Launch(s1, profile.Kernel{Flops: 81_000_000_000}) // 10 ms
	e := b.RecordEvent(s1).(*Event)
	b.WaitEvent(s2, e)
	b.Launch(s2, profile.Kernel{})
	assert.Equal(t, e.Time()+p.LaunchOverhead, b.StreamClock(s2))
	e.Synchronize()
	assert.Equal(t, e.Time(), b.Now())
	assert.True(t, e.Query())
	assert.Equal(t, float64(b.Now())/1e3, b.NowMicros())
}

func TestDeviceAndPeerCopies(t *testing.T) {
	p := lookup(t, "classroom")
	b0, b1, m := New(0, p), New(1, p), NewMeta(0, p)
	x, _ := b0.Malloc(1024)
	y, _ := b0.Malloc(1024)
	z, _ := b1.Malloc(1024)
	w, _ := m.Malloc(1024)
	copy(b0.Bytes(x, 1024), "hello, device")
	require.NoError(t, b0.CopyDtoD(y, x, 13, 0))
	assert.Equal(t, "hello, device", string(b0.Bytes(y, 13)))
	assert.Equal(t, p.DeviceCopyCost(13), b0.StreamClock(0)-(b0.Now()-p.LaunchOverhead), "asynchronous, 2n/HBM")
	t0 := b1.Now()
	require.NoError(t, b1.CopyPeer(z, b1, y, b0, 13, 0))
	assert.Equal(t, "hello, device", string(b1.Bytes(z, 13)))
	assert.Equal(t, p.LaunchOverhead, b1.Now()-t0)
	assert.Equal(t, t0+p.PeerCopyCost(13), b1.StreamClock(0))
	require.NoError(t, m.CopyPeer(w, m, z, b1, 13, 0), "to meta: accounting only")
	require.Error(t, b0.CopyDtoD(y, x, 2000, 0))
	require.Error(t, b1.CopyPeer(z, b1, z, b0, 1, 0), "source not on b0")
}

func TestConcurrent(t *testing.T) {
	b := New(0, small(64<<20))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := b.NewStream()
			for i := range 100 {
				a, err := b.Malloc(int64(4096 + g*i))
				if err != nil {
					if !errors.Is(err, alloc.ErrDeviceFull) {
						t.Error(err)
					}
					continue
				}
				buf := []byte{byte(g), byte(i)}
				if err := b.CopyHtoD(a, buf, i%2 == 0, s, true); err != nil {
					t.Error(err)
				}
				out := make([]byte, 2)
				if err := b.CopyDtoH(out, a, true, s, false); err != nil {
					t.Error(err)
				}
				if out[0] != byte(g) || out[1] != byte(i) {
					t.Errorf("got %v", out)
				}
				b.Launch(s, profile.Kernel{Flops: 1000})
				e := b.RecordEvent(s)
				_ = e.Query()
				if err := b.Free(a); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	n, used := b.Segments()
	assert.Zero(t, n)
	assert.Zero(t, used)
}

func TestProfiles(t *testing.T) {
	ps := profile.Profiles()
	require.Len(t, ps, 4)
	want := map[string]struct {
		capacity        int64
		hbm, fp32, fp16 float64
	}{
		"classroom": {2 * profile.GiB, 112e9, 2e12, 4e12},
		"t4":        {16 * profile.GiB, 320e9, 8.1e12, 65e12},
		"a100-40gb": {40 * profile.GiB, 1555e9, 19.5e12, 312e12},
		"h100-80gb": {80 * profile.GiB, 3350e9, 67e12, 989e12},
	}
	for _, p := range ps {
		t.Run(p.Name, func(t *testing.T) {
			w, ok := want[p.Name]
			require.True(t, ok)
			require.NoError(t, p.Validate())
			assert.Equal(t, w.capacity, p.Capacity)
			assert.InDelta(t, w.hbm, p.HBMBandwidth, 1)
			assert.InDelta(t, w.fp32, p.FP32, 1)
			assert.InDelta(t, w.fp16, p.FP16, 1)
			assert.Less(t, p.PCIePageable, p.PCIePinned/2, "pageable markedly slower")
			assert.NotEmpty(t, p.Source)
			q, err := profile.LookupProfile(p.Name)
			require.NoError(t, err)
			assert.Equal(t, p, q)
		})
	}
	_, err := profile.LookupProfile("rtx-9090")
	require.ErrorContains(t, err, `"t4"`)
	pc, _ := profile.LookupProfile("T4")
	assert.Equal(t, "t4", pc.Name)
	assert.Greater(t, ps[1].PCIePinned, 12e9)
}
