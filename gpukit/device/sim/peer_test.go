package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device/profile"
)

// A peer copy takes NVLink when both cards have it, PCIe otherwise, and
// costs the launch overhead plus the bytes at that link's rate.
func TestPeerCopyPath(t *testing.T) {
	const n = 3 << 20 // 3 MiB: the clock charges any size exactly
	for _, tc := range []struct {
		src, dst string
		link     string
		perSec   float64 // bytes per second of the link
	}{
		{"a100-40gb", "a100-40gb", profile.LinkNVLink, 300e9}, // 600 GB/s both ways
		{"h100-80gb", "h100-80gb", profile.LinkNVLink, 450e9}, // 900 GB/s both ways
		{"a100-40gb", "h100-80gb", profile.LinkNVLink, 300e9}, // the slower end
		{"classroom", "classroom", profile.LinkPCIe, 12.6e9},  // 80% of PCIe 3.0 x16
		{"t4", "t4", profile.LinkPCIe, 12.6e9},                // no NVLink on a T4
		{"h100-80gb", "t4", profile.LinkPCIe, 12.6e9},         // one end without NVLink: PCIe, at the slower end
		{"a100-40gb", "classroom", profile.LinkPCIe, 12.6e9},  //
	} {
		t.Run(tc.src+"->"+tc.dst, func(t *testing.T) {
			ps, pd := lookup(t, tc.src), lookup(t, tc.dst)
			link, bw := profile.PeerPath(ps, pd)
			assert.Equal(t, tc.link, link)
			assert.InEpsilon(t, tc.perSec, bw, 1e-9)

			src, dst := New(0, ps), New(1, pd)
			x, err := src.Malloc(n)
			require.NoError(t, err)
			y, err := dst.Malloc(n)
			require.NoError(t, err)
			t0 := dst.Now()
			require.NoError(t, dst.CopyPeer(y, dst, x, src, n, 0))
			want := pd.LaunchOverhead + time.Duration(float64(n)/tc.perSec*1e9+0.5)
			assert.Equal(t, t0+want, dst.StreamClock(0), "queued on the destination's stream")
		})
	}
}

func TestNVLinkMustNotBeNegative(t *testing.T) {
	p := lookup(t, "classroom")
	p.NVLink = -1
	assert.ErrorContains(t, p.Validate(), "NVLink bandwidth -1 must be 0 (none) or positive")
}

// A process group of many meta cards needs indices beyond the sixteen
// device.Open names; their windows follow one another without overlap.
func TestMetaIndicesBeyondTheRegistry(t *testing.T) {
	p := lookup(t, "h100-80gb")
	last := NewMeta(MaxMetaIndex, p)
	addr, err := last.Malloc(1 << 30)
	require.NoError(t, err)
	assert.Equal(t, Base(MaxMetaIndex, true), addr)
	assert.Greater(t, Base(MaxMetaIndex, true), Base(MaxMetaIndex-1, true)+Window-1)
	assert.PanicsWithValue(t, "sim: meta device index 4096 outside 0..4095", func() { NewMeta(MaxMetaIndex+1, p) })
	assert.PanicsWithValue(t, "sim: sim device index 16 outside 0..15", func() { New(MaxIndex+1, p) })
}

// Occupy keeps a stream busy for a duration its caller costed, after the
// stream's earlier work, and costs the host a launch.
func TestOccupy(t *testing.T) {
	p := lookup(t, "h100-80gb")
	b := NewMeta(0, p)
	s := b.NewStream()
	b.Occupy(s, 3*time.Millisecond)
	b.Occupy(s, 2*time.Millisecond)
	assert.Equal(t, 5*time.Millisecond, b.StreamClock(s), "the second starts when the first ends")
	assert.Equal(t, 2*p.LaunchOverhead, b.Now())
	assert.Panics(t, func() { b.Occupy(s, -1) })
}
