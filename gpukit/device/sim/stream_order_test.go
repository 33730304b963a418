package sim_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/device/simtest"
)

// offload computes chunks on stream 0 and copies each result back on a
// side stream that falls behind (copies are slower than compute), freeing
// each result right after queuing its copy, with or without RecordStream.
// It returns what reached the host.
func offload(t *testing.T, record bool) [][]byte {
	t.Helper()
	d := simtest.Card(t)
	copyS := d.NewStream()
	const n, chunks = 8 << 20, 4
	host := make([][]byte, chunks)
	for i := range host {
		host[i] = make([]byte, n)
		out, err := d.Malloc(n, d.DefaultStream())
		require.NoError(t, err)
		// Stream-0 "compute": the result of chunk i is n bytes of i+1.
		copy(d.Bytes(out), bytes.Repeat([]byte{byte(i + 1)}, n))
		d.Launch(d.DefaultStream(), device.Kernel{Name: "model", Bytes: n})
		d.WaitEvent(copyS, d.RecordEvent(d.DefaultStream()))
		require.NoError(t, d.CopyToHost(host[i], out, 0, true, copyS, true))
		if record {
			d.RecordStream(out, copyS)
		}
		d.Free(out)
	}
	d.Synchronize()
	return host
}

func TestFreeWithoutRecordStreamCorruptsPendingCopy(t *testing.T) {
	for _, record := range []bool{false, true} {
		host := offload(t, record)
		wrong := 0
		for i, h := range host {
			if !bytes.Equal(h, bytes.Repeat([]byte{byte(i + 1)}, len(h))) {
				wrong++
			}
		}
		if record {
			assert.Zero(t, wrong, "with RecordStream every chunk must reach the host intact")
		} else {
			assert.Positive(t, wrong, "without RecordStream the reused block must corrupt a pending copy")
		}
	}
}

func TestDeferredCopyMovesAtItsVirtualStart(t *testing.T) {
	p, err := device.LookupProfile("classroom")
	require.NoError(t, err)
	b := sim.New(0, p)
	a, err := b.Malloc(1 << 20)
	require.NoError(t, err)
	s := b.NewStream()
	// Make s busy for a long time, then queue a copy behind that work.
	b.Launch(s, device.Kernel{Flops: 2e12}) // 1 s on the classroom card
	src := bytes.Repeat([]byte{7}, 1<<20)
	require.NoError(t, b.CopyHtoD(a, src, true, s, true))
	assert.Equal(t, 1, b.Pending())
	assert.Zero(t, b.Bytes(a, 1)[0], "the copy has not started in virtual time")
	b.StreamSynchronize(s)
	assert.Zero(t, b.Pending())
	assert.Equal(t, byte(7), b.Bytes(a, 1)[0])

	// On an idle stream the copy starts at once: it is applied when the
	// host moves on.
	src2 := bytes.Repeat([]byte{9}, 1<<20)
	require.NoError(t, b.CopyHtoD(a, src2, true, s, true))
	assert.Zero(t, b.Pending())
	assert.Equal(t, byte(9), b.Bytes(a, 1)[0])

	// Stream 0 copies are never deferred; a synchronous copy on s waits
	// for the pending ones before it.
	b.Launch(s, device.Kernel{Flops: 2e12})
	require.NoError(t, b.CopyHtoD(a, src, true, s, true))
	require.NoError(t, b.CopyHtoD(a, src2, true, s, false))
	assert.Zero(t, b.Pending())
	assert.Equal(t, byte(9), b.Bytes(a, 1)[0], "copies on one stream land in queue order")
	require.NoError(t, b.Free(a))
}
