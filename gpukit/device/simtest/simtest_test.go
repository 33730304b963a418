package simtest_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/simtest"
)

func TestOptions(t *testing.T) {
	classroom, err := device.LookupProfile("classroom")
	require.NoError(t, err)
	for _, c := range []struct {
		name     string
		opts     []simtest.Option
		want     string // the device's name
		kind     device.Kind
		capacity int64
		context  int64
		settings string // the allocator's, as PYTORCH_CUDA_ALLOC_CONF reads
	}{
		{"classroom", nil, "sim:0", device.Sim, classroom.Capacity, classroom.ContextSize, ""},
		{"index", []simtest.Option{simtest.Index(3)}, "sim:3", device.Sim, classroom.Capacity, classroom.ContextSize, ""},
		{"capacity", []simtest.Option{simtest.Capacity(256 << 20)}, "sim:0", device.Sim, 256 << 20, 0, ""},
		{"full", []simtest.Option{simtest.FullCapacity()}, "sim:0", device.Sim, classroom.Capacity, 0, ""},
		{"meta", []simtest.Option{simtest.Meta(), simtest.Index(4095)}, "meta:4095", device.Meta, classroom.Capacity, classroom.ContextSize, ""},
		{"profile", []simtest.Option{simtest.Profile("h100-80gb"), simtest.Meta()}, "meta:0", device.Meta, 80 << 30, -1, ""},
		{"conf", []simtest.Option{simtest.AllocConf("expandable_segments:True")}, "sim:0", device.Sim, classroom.Capacity, classroom.ContextSize, "expandable_segments:True"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := simtest.Card(t, c.opts...)
			assert.Equal(t, c.want, d.Name())
			assert.Equal(t, c.kind, d.Kind())
			if c.capacity != 80<<30 {
				assert.Equal(t, c.capacity, d.Profile().Capacity)
			}
			if c.context >= 0 {
				assert.Equal(t, c.context, d.Profile().ContextSize)
			}
			assert.Equal(t, c.settings != "", d.AllocConfig().ExpandableSegments)
			assert.Zero(t, d.MemoryAllocated(), "a fresh card holds nothing")
		})
	}
}

func TestWorkspace(t *testing.T) {
	d := simtest.Card(t, simtest.BlasWorkspace())
	assert.Positive(t, d.MemoryAllocated(), "cuBLAS's workspace is taken")
	e := simtest.Card(t)
	assert.Equal(t, d.MemoryAllocated(), simtest.WarmBlas(t, e))
}

// Each card is the test's own: two cards of one index share nothing.
func TestCardsAreFresh(t *testing.T) {
	a, b := simtest.Card(t), simtest.Card(t)
	require.NotSame(t, a, b)
	_, err := a.Malloc(1<<20, a.DefaultStream())
	require.NoError(t, err)
	assert.Zero(t, b.MemoryAllocated())
}

func TestMisuse(t *testing.T) {
	for _, c := range []struct {
		opts []simtest.Option
		want string
	}{
		{[]simtest.Option{simtest.Profile("gtx-9000")}, `simtest: `},
		{[]simtest.Option{simtest.Capacity(0)}, "simtest: capacity 0 bytes: must be positive"},
		{[]simtest.Option{simtest.Capacity(-5)}, "simtest: capacity -5 bytes: must be positive"},
		{[]simtest.Option{simtest.Index(-1)}, "simtest: index -1: must be at least 0"},
		{[]simtest.Option{simtest.Index(16)}, "simtest: index 16: above 15, the highest this kind of card takes"},
		{[]simtest.Option{simtest.Meta(), simtest.Index(4096)}, "simtest: index 4096: above 4095"},
		{[]simtest.Option{simtest.AllocConf("expandable_segments:Maybe")}, "simtest: "},
		{[]simtest.Option{simtest.AllocConf(""), simtest.AllocConfig(alloc.Config{})}, "simtest: AllocConf and AllocConfig both given"},
	} {
		d, err := simtest.New(c.opts...)
		assert.Nil(t, d)
		if assert.Error(t, err) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
}

// A test that runs a card out of memory makes it small, so that filling it
// is quick (in a test, simtest.Card(t, ...) fails the test on a bad option).
func ExampleNew() {
	dev, err := simtest.New(simtest.Capacity(64 << 20))
	if err != nil {
		panic(err)
	}
	_, err = dev.Malloc(100<<20, dev.DefaultStream())
	fmt.Println(dev.Profile().Capacity>>20, "MiB, out of memory:", err != nil)
	// Output: 64 MiB, out of memory: true
}

func TestCards(t *testing.T) {
	devs := simtest.Cards(t, 3, simtest.Meta(), simtest.Index(7))
	require.Len(t, devs, 3)
	for i, d := range devs {
		assert.Equal(t, fmt.Sprintf("meta:%d", i), d.Name(), "Cards numbers its cards from 0, whatever Index says")
	}
}
