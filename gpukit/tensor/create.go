package tensor

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/gpumem/course/gpukit/dtypes"
)

// Option configures where and how a tensor is created. Dtype is an Option
// itself, so both tensor.Zeros(shape, tensor.Float16) and
// tensor.Zeros(shape, tensor.Dtype(tensor.Float16)) work.
type Option interface{ apply(*config) }

type config struct {
	mem          memory
	dtype        Dtype
	dtypeSet     bool
	requiresGrad bool
	gen          *Generator
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

func (d Dtype) apply(c *config) { c.dtype = d; c.dtypeSet = true }

// RequiresGrad makes the new tensor a leaf that requires grad.
func RequiresGrad() Option { return optionFunc(func(c *config) { c.requiresGrad = true }) }

// WithGenerator draws random values from g instead of the default
// generator.
func WithGenerator(g *Generator) Option { return optionFunc(func(c *config) { c.gen = g }) }

// OnHost places the tensor in host memory, page-locked when pinned (pinned
// memory is what asynchronous copies need; see lesson 05).
func OnHost(pinned bool) Option {
	return optionFunc(func(c *config) { c.mem = hostMemory(pinned) })
}

// like returns options that place a new tensor where t is, with t's dtype.
func like(t *Tensor) Option {
	return optionFunc(func(c *config) { c.mem = t.outMem(); c.dtype = t.dtype; c.dtypeSet = true })
}

// newConfig applies opts over the defaults: Float32 on device.Default().
func newConfig(opts []Option) config { return newConfigOf(Float32, opts) }

// newConfigOf is newConfig with another default dtype.
func newConfigOf(dtype Dtype, opts []Option) config {
	c := config{dtype: dtype}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.mem == nil {
		c.mem = defaultMemory()
	}
	return c
}

// generator is the WithGenerator generator, or the default one.
func (c config) generator() *Generator {
	if c.gen != nil {
		return c.gen
	}
	return defaultGen
}

// empty allocates an uninitialised contiguous tensor, panicking with the
// allocation error (e.g. *alloc.OutOfMemoryError) on failure.
func empty(mem memory, shape []int, dt Dtype) *Tensor {
	t, err := tryEmpty(mem, shape, dt)
	if err != nil {
		panicAlloc(err)
	}
	return t
}

func tryEmpty(mem memory, shape []int, dt Dtype) (*Tensor, error) {
	n, err := shapeNumel(shape)
	if err != nil {
		return nil, errorf("%v", err)
	}
	nbytes, err := storageBytes(shape, n, dt)
	if err != nil {
		return nil, errorf("%v", err)
	}
	st, err := newStorage(mem, nbytes)
	if err != nil {
		return nil, err
	}
	shape, strides := contiguousLayout(shape)
	return wrap(st, 0, shape, strides, dt), nil
}

func finish(t *Tensor, c config) *Tensor {
	if c.requiresGrad {
		t.SetRequiresGrad(true)
	}
	return t
}

// TryEmpty is Empty that returns allocation errors (such as
// *alloc.OutOfMemoryError) instead of panicking with them, as Try(func() {
// t = Empty(...) }) would. The other creation functions panic; wrap them
// in Try to get an error.
func TryEmpty(shape []int, opts ...Option) (*Tensor, error) {
	c := newConfig(opts)
	t, err := tryEmpty(c.mem, shape, c.dtype)
	if err != nil {
		return nil, err
	}
	return finish(t, c), nil
}

// Empty returns an uninitialised tensor (its bytes are whatever the block
// held before, as with torch.empty).
func Empty(shape []int, opts ...Option) *Tensor {
	c := newConfig(opts)
	return finish(empty(c.mem, shape, c.dtype), c)
}

// Full returns a tensor filled with v.
func Full(shape []int, v float64, opts ...Option) *Tensor {
	c := newConfig(opts)
	t := empty(c.mem, shape, c.dtype)
	fillKernel(t, v)
	return finish(t, c)
}

// Zeros returns a tensor of zeros.
func Zeros(shape []int, opts ...Option) *Tensor { return Full(shape, 0, opts...) }

// Ones returns a tensor of ones.
func Ones(shape []int, opts ...Option) *Tensor { return Full(shape, 1, opts...) }

// ZerosLike returns zeros with t's shape, dtype and device.
func ZerosLike(t *Tensor) *Tensor { return Zeros(t.shape, like(t)) }

func onesLike(t *Tensor) *Tensor { return Ones(t.shape, like(t)) }

// Arange returns the 1-d tensor [start, start+step, ...) stopping before
// end. Its dtype defaults to Int64 when start, end and step are integers,
// Float32 otherwise (as torch.arange).
func Arange(start, end, step float64, opts ...Option) *Tensor {
	for _, v := range []struct {
		name string
		v    float64
	}{{"start", start}, {"end", end}, {"step", step}} {
		if math.IsNaN(v.v) || math.IsInf(v.v, 0) {
			panicf("Arange: %s is %v; start, end and step must be finite numbers", v.name, v.v)
		}
	}
	if step == 0 {
		panicf("Arange: step must be nonzero")
	}
	if (end-start)/step < 0 {
		panicf("Arange: upper bound and larger bound inconsistent with step sign: range [%v, %v) with step %v", start, end, step)
	}
	count := math.Ceil((end - start) / step)
	if count >= math.MaxInt64 || math.IsInf(end-start, 0) {
		panicf("Arange: range [%v, %v) with step %v has %v elements, more than a tensor can hold", start, end, step, count)
	}
	n := int(count)
	dtype := Float32
	if start == math.Trunc(start) && end == math.Trunc(end) && step == math.Trunc(step) {
		dtype = Int64
	}
	c := newConfigOf(dtype, opts)
	t := empty(c.mem, []int{n}, c.dtype)
	writeValues(t, func(data []byte) {
		for i := range n {
			store(t.dtype, data, i, start+float64(i)*step)
		}
	})
	t.charge("arange", 0)
	return finish(t, c)
}

// FromSlice copies data (a []float32, []float64, []int64, []int32, []int,
// []bool, or []uint16 holding float16 bits) into a new tensor of the given
// shape. The dtype defaults to the slice's element type ([]int → Int64,
// []uint16 → Float16) and may be overridden with a Dtype option, in which
// case values are converted.
func FromSlice[E float32 | float64 | int64 | int32 | int | bool | uint16](data []E, shape []int, opts ...Option) *Tensor {
	var natural Dtype
	switch any(data).(type) {
	case []float32:
		natural = Float32
	case []float64:
		natural = Float64
	case []int64, []int:
		natural = Int64
	case []int32:
		natural = Int32
	case []bool:
		natural = Bool
	case []uint16:
		natural = Float16
	}
	c := newConfigOf(natural, opts)
	shape = inferShape("FromSlice", shape, len(data))
	t := empty(c.mem, shape, c.dtype)
	writeValues(t, func(out []byte) {
		for i, v := range data {
			var f float64
			switch v := any(v).(type) {
			case float32:
				f = float64(v)
			case float64:
				f = v
			case int64:
				f = float64(v)
			case int32:
				f = float64(v)
			case int:
				f = float64(v)
			case bool:
				if v {
					f = 1
				}
			case uint16:
				f = float64(dtypes.Float16ToFloat32(v))
			}
			store(t.dtype, out, i, f)
		}
	})
	return finish(t, c)
}

// Scalar returns a 0-d tensor holding v.
func Scalar(v float64, opts ...Option) *Tensor { return Full(nil, v, opts...) }

// Generator is a seeded source of random numbers (torch.Generator).
// It is safe for concurrent use.
type Generator struct {
	mu  sync.Mutex
	rng *rand.Rand
	src *rand.PCG // rng's source, whose state State and SetState read and write
}

// NewGenerator returns a generator seeded with seed: the same seed gives
// the same tensors.
func NewGenerator(seed uint64) *Generator {
	src := rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	return &Generator{rng: rand.New(src), src: src}
}

var defaultGen = NewGenerator(0)

// ManualSeed reseeds the default generator (torch.manual_seed). The
// default generator starts seeded with 0, so programs are reproducible.
func ManualSeed(seed uint64) {
	g := NewGenerator(seed)
	defaultGen.mu.Lock()
	defaultGen.rng, defaultGen.src = g.rng, g.src
	defaultGen.mu.Unlock()
}

// Rand returns values uniform in [0, 1).
func Rand(shape []int, opts ...Option) *Tensor {
	return random(shape, opts, func(r *rand.Rand) float64 { return r.Float64() })
}

// Randn returns values from the standard normal distribution.
func Randn(shape []int, opts ...Option) *Tensor {
	return random(shape, opts, func(r *rand.Rand) float64 { return r.NormFloat64() })
}

func random(shape []int, opts []Option, draw func(*rand.Rand) float64) *Tensor {
	c := newConfig(opts)
	if !c.dtype.IsFloat() {
		panicf("random: dtype %s is not a floating-point type", c.dtype)
	}
	g := c.generator()
	t := empty(c.mem, shape, c.dtype)
	writeValues(t, func(data []byte) {
		g.mu.Lock()
		defer g.mu.Unlock()
		for i := range t.Numel() {
			store(t.dtype, data, i, draw(g.rng))
		}
	})
	t.charge("random", 0)
	return finish(t, c)
}

// Randint returns integers drawn uniformly from [low, high)
// (torch.randint). The dtype defaults to Int64; another dtype (Int32, a
// float type) receives the same integers converted. Like Rand, it draws
// from the default generator or from WithGenerator's.
func Randint(low, high int64, shape []int, opts ...Option) *Tensor {
	if high <= low {
		panicf("Randint: empty range [%d, %d): high must be greater than low", low, high)
	}
	c := newConfigOf(Int64, opts)
	if c.dtype == Bool {
		panicf("Randint: dtype bool is not supported")
	}
	g := c.generator()
	t := empty(c.mem, shape, c.dtype)
	span := uint64(high) - uint64(low) // exact: high - low may overflow an int64
	writeValues(t, func(data []byte) {
		g.mu.Lock()
		defer g.mu.Unlock()
		for i := range t.Numel() {
			v := low + int64(g.rng.Uint64N(span))
			if t.dtype == Int64 {
				binary.LittleEndian.PutUint64(data[8*i:], uint64(v)) // exact beyond 2⁵³
			} else {
				store(t.dtype, data, i, float64(v))
			}
		}
	})
	t.charge("randint", 0)
	return finish(t, c)
}

// Perm returns a random permutation of 0..n-1 drawn from g (a host slice;
// Randperm puts one in a tensor).
func (g *Generator) Perm(n int) []int {
	if n < 0 {
		panicf("Perm: negative n %d", n)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rng.Perm(n)
}

// Randperm returns a random permutation of 0..n-1 as a 1-d tensor
// (torch.randperm), Int64 by default, from the default generator or from
// WithGenerator's.
func Randperm(n int, opts ...Option) *Tensor {
	if n < 0 {
		panicf("Randperm: negative n %d", n)
	}
	// Allocate first: a size too large for the device fails here with the
	// allocator's error, before n integers are drawn on the host.
	c := newConfigOf(Int64, opts)
	t := empty(c.mem, []int{n}, c.dtype)
	writeValues(t, func(data []byte) { // not called on a meta device
		for i, v := range c.generator().Perm(n) {
			if t.dtype == Int64 {
				binary.LittleEndian.PutUint64(data[8*i:], uint64(v))
			} else {
				store(t.dtype, data, i, float64(v))
			}
		}
	})
	t.charge("randperm", 0)
	return finish(t, c)
}
