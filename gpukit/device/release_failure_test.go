package device_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
)

var errFreeFailed = errors.New("injected cudaFree failure")

// failingFree is a sim card whose raw frees fail while fail is set, as
// cudaFree fails after a sticky error; a failed free changes nothing.
type failingFree struct {
	*sim.Backend
	fail atomic.Bool
}

func (b *failingFree) Free(addr uint64) error {
	if b.fail.Load() {
		return errFreeFailed
	}
	return b.Backend.Free(addr)
}

// TestReleaseFailureReachesTheCaller: a raw free that fails comes back from
// Device.Malloc (whose retry frees cached segments) and Device.TryEmptyCache
// as an error, the memory stays reserved, and both succeed once the card
// frees again (issue 36).
func TestReleaseFailureReachesTheCaller(t *testing.T) {
	b := &failingFree{Backend: sim.New(0, mustProfile(t, "classroom"))}
	d, err := device.New(b)
	require.NoError(t, err)
	size := d.Profile().Capacity / 5 * 3
	x, err := d.Malloc(size, d.DefaultStream())
	require.NoError(t, err)
	d.Free(x)
	reserved := d.MemoryReserved()

	b.fail.Store(true)
	s := d.NewStream()
	blk, err := d.Malloc(size, s) // needs the segment cached for the default stream
	assert.Nil(t, blk)
	require.ErrorIs(t, err, errFreeFailed)
	assert.True(t, strings.HasPrefix(err.Error(), "alloc: "), "error %q lacks the allocator's prefix", err)
	require.ErrorIs(t, d.TryEmptyCache(), errFreeFailed)
	assert.Equal(t, reserved, d.MemoryReserved(), "a failed free released memory")
	assert.Zero(t, d.Stats()["num_device_free"])

	b.fail.Store(false)
	require.NoError(t, d.TryEmptyCache())
	assert.Zero(t, d.MemoryReserved())
	y, err := d.Malloc(size, s)
	require.NoError(t, err)
	d.Free(y)
}
