package device_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/profile"
	"github.com/gpumem/course/gpukit/device/simtest"
)

// A copy between two H100s goes over NVLink, between two classroom cards
// over PCIe: the same 64 MiB take 450 GB/s against 12.6 GB/s.
func TestCopyDeviceTakesThePeerPath(t *testing.T) {
	const n = 64 << 20
	for _, tc := range []struct {
		profile string
		link    string
	}{{"h100-80gb", "NVLink"}, {"classroom", "PCIe"}} {
		p, err := device.LookupProfile(tc.profile)
		require.NoError(t, err)
		// Meta cards: the copy's time is what is checked, and 64 MiB
		// of real bytes would cost the race detector seconds to shadow.
		d0, d1 := simtest.Card(t, simtest.Profile(tc.profile), simtest.Meta()), simtest.Card(t, simtest.Profile(tc.profile), simtest.Meta(), simtest.Index(1))
		link, bw := device.PeerPath(p, p)
		assert.Equal(t, tc.link, link)
		x, err := d0.Malloc(n, 0)
		require.NoError(t, err)
		y, err := d1.Malloc(n, 0)
		require.NoError(t, err)
		d1.Synchronize()
		t0 := d1.Now()
		require.NoError(t, d1.CopyDevice(y, 0, x, 0, n, 0))
		d1.Synchronize()
		assert.Equal(t, p.LaunchOverhead+profile.Seconds(n/bw), d1.Now()-t0, tc.profile)
	}
}
