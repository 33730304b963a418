// Package simtest builds the simulated cards that tests and exercises run
// on: a fresh card of their own, never the one device.Open("sim:0") shares,
// so each test starts from an empty allocator and a clock at zero.
//
// The default is what the course calls the classroom card (the
// "classroom" profile, with real bytes, at index 0, its allocator
// configured from PYTORCH_CUDA_ALLOC_CONF as device.New does); options
// change one thing each:
//
//	dev := simtest.Card(t)                                      // the classroom card
//	dev := simtest.Card(t, simtest.Capacity(256<<20))           // a made-up 256 MiB card, all of it the allocator's
//	dev := simtest.Card(t, simtest.Meta(), simtest.AllocConf("expandable_segments:True"))
//	dev := simtest.Card(t, simtest.BlasWorkspace())             // cuBLAS's workspace already taken
//
// Card fails the test on a bad option; New returns the error, for code
// that is not a test (an exercise's model, a command).
package simtest

import (
	"fmt"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
)

// An Option changes one thing of the card New and Card build.
type Option func(*config)

type config struct {
	profile   string
	capacity  int64 // 0: the profile's own
	name      string
	meta      bool
	index     int
	conf      *string
	cfg       *alloc.Config
	workspace bool
	device    []device.Option
	err       error
}

func (c *config) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("simtest: "+format, args...)
	}
}

// Profile builds a card of the named profile (device.LookupProfile)
// instead of the classroom card's.
func Profile(name string) Option { return func(c *config) { c.profile = name } }

// Capacity makes a made-up card of capacity bytes with no CUDA context,
// all of its memory the allocator's (device.Profile.Resized): a test
// picks the size at which it runs out of memory.
func Capacity(bytes int64) Option {
	return func(c *config) {
		if bytes <= 0 {
			c.fail("capacity %d bytes: must be positive", bytes)
		}
		c.capacity = bytes
	}
}

// FullCapacity is Capacity of the profile's own memory: the card's size,
// without the CUDA context, so that all of it is the allocator's budget.
func FullCapacity() Option { return func(c *config) { c.capacity = -1 } }

// Named renames the card's profile (a resized card reads "tiny" in
// messages rather than the name of the card it was made from).
func Named(name string) Option { return func(c *config) { c.name = name } }

// Meta makes a meta card: the allocator and the clock without backing
// bytes, so that a test can fill terabytes at no host memory.
func Meta() Option { return func(c *config) { c.meta = true } }

// Index gives the card another index (0 unless set): two cards of one
// test that copy between each other need different ones.
func Index(i int) Option {
	return func(c *config) {
		if i < 0 {
			c.fail("index %d: must be at least 0", i)
		}
		c.index = i
	}
}

// AllocConf configures the allocator from a PYTORCH_CUDA_ALLOC_CONF
// string, such as "expandable_segments:True" ("" is PyTorch's defaults),
// instead of the environment.
func AllocConf(conf string) Option { return func(c *config) { c.conf = &conf } }

// AllocConfig configures the allocator with cfg instead of the
// environment.
func AllocConfig(cfg alloc.Config) Option { return func(c *config) { c.cfg = &cfg } }

// BlasWorkspace takes cuBLAS's workspace for the default stream, as the
// first matrix product on the card would (device.BlasWorkspace): a test
// that counts the bytes of its tensors measures from there.
func BlasWorkspace() Option { return func(c *config) { c.workspace = true } }

// With passes options to device.New, after those the other options make
// (a later device.WithAllocConfig wins over AllocConf).
func With(opts ...device.Option) Option {
	return func(c *config) { c.device = append(c.device, opts...) }
}

// New builds a card with the options.
func New(opts ...Option) (*device.Device, error) {
	c := config{profile: "classroom"}
	for _, opt := range opts {
		opt(&c)
	}
	if c.err != nil {
		return nil, c.err
	}
	if c.conf != nil && c.cfg != nil {
		return nil, fmt.Errorf("simtest: AllocConf and AllocConfig both given; give one")
	}
	p, err := device.LookupProfile(c.profile)
	if err != nil {
		return nil, fmt.Errorf("simtest: %w", err)
	}
	switch {
	case c.capacity > 0:
		p = p.Resized(c.capacity)
	case c.capacity < 0:
		p = p.Resized(p.Capacity)
	}
	if c.name != "" {
		p.Name = c.name
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("simtest: %w", err)
	}
	top := sim.MaxIndex
	if c.meta {
		top = sim.MaxMetaIndex
	}
	if c.index > top {
		return nil, fmt.Errorf("simtest: index %d: above %d, the highest this kind of card takes", c.index, top)
	}
	var devOpts []device.Option
	switch {
	case c.conf != nil:
		cfg, err := alloc.ParseConfig(*c.conf)
		if err != nil {
			return nil, fmt.Errorf("simtest: %w", err)
		}
		devOpts = append(devOpts, device.WithAllocConfig(cfg))
	case c.cfg != nil:
		devOpts = append(devOpts, device.WithAllocConfig(*c.cfg))
	}
	devOpts = append(devOpts, c.device...)
	var b device.Backend
	if c.meta {
		b = sim.NewMeta(c.index, p)
	} else {
		b = sim.New(c.index, p)
	}
	d, err := device.New(b, devOpts...)
	if err != nil {
		return nil, err
	}
	if c.workspace {
		if err := d.BlasWorkspace(d.DefaultStream()); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Card is New for a test: it fails the test on an error.
func Card(t testing.TB, opts ...Option) *device.Device {
	t.Helper()
	d, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Cards is Card for n cards of one kind, at indices 0 to n-1 (Index is
// ignored): the devices of a process group.
func Cards(t testing.TB, n int, opts ...Option) []*device.Device {
	t.Helper()
	devs := make([]*device.Device, n)
	for i := range devs {
		devs[i] = Card(t, append(opts, Index(i))...)
	}
	return devs
}

// WarmBlas takes d's cuBLAS workspace for its default stream, as the first
// matrix product on it would (device.BlasWorkspace), and returns the bytes
// allocated afterwards: a test that counts the bytes of tensors measures
// from there, and expects that much to stay once its tensors are gone.
func WarmBlas(t testing.TB, d *device.Device) int64 {
	t.Helper()
	if err := d.BlasWorkspace(d.DefaultStream()); err != nil {
		t.Fatal(err)
	}
	return d.MemoryAllocated()
}
