package amp_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/amp"
	"github.com/gpumem/course/gpukit/device/simtest"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// A float16 region holding bfloat16 regions caches one cast of the weight
// per dtype, counts both in CacheBytes, and releases both when the
// outermost region ends.
func TestNestedAutocastReleasesEveryCast(t *testing.T) {
	dev := simtest.Card(t)
	w := tensor.Ones([]int{256, 256}, tensor.On(dev), tensor.RequiresGrad())
	x := tensor.Ones([]int{4, 256}, tensor.On(dev))
	simtest.WarmBlas(t, dev) // the first product's cuBLAS workspace stays for good: not part of what is measured
	base := dev.MemoryAllocated()
	const cast = 256 * 256 * 2
	use := func() { x.Matmul(w).Release() }
	require.NoError(t, amp.Autocast(tensor.Float16, func() {
		use()
		assert.EqualValues(t, cast, amp.CacheBytes())
		for range 3 {
			require.NoError(t, amp.Autocast(tensor.BFloat16, func() {
				use()
				assert.EqualValues(t, 2*cast, amp.CacheBytes(), "one cast per dtype")
			}))
			use()
		}
		assert.EqualValues(t, 2*cast, amp.CacheBytes())
		assert.EqualValues(t, 2*cast, dev.MemoryAllocated()-base, "what CacheBytes reports is all that is held")
	}))
	assert.Equal(t, base, dev.MemoryAllocated(), "the outermost region releases every cast")
}

func TestAutocastMisuse(t *testing.T) {
	assert.EqualError(t, amp.Autocast(tensor.Float16, nil), "amp: Autocast: fn is nil")
	for _, f := range []float64{math.Inf(1), math.NaN()} {
		c := amp.DefaultGradScaler()
		c.GrowthFactor = f
		_, err := amp.NewGradScaler(c)
		assert.ErrorContains(t, err, "amp: GradScaler: the growth factor must be a finite number > 1.0", "growth %v", f)
	}
	c := amp.DefaultGradScaler()
	c.InitScale, c.GrowthInterval = math.MaxFloat32, 1
	s, err := amp.NewGradScaler(c)
	require.NoError(t, err)
	dev := simtest.Card(t)
	p := tensor.Ones([]int{2}, tensor.On(dev), tensor.RequiresGrad())
	loss := p.Sum()
	s.Scale(loss).Release()
	loss.Release()
	s.Update()
	assert.Equal(t, float64(math.MaxFloat32), s.GetScale(), "a scale that growing would make infinite stays as it is")
}

func TestGradScalerWithoutOptimizer(t *testing.T) {
	s, err := amp.NewGradScaler(amp.DefaultGradScaler())
	require.NoError(t, err)
	var sgd *optim.SGD
	assert.EqualError(t, s.Unscale(nil), "amp: GradScaler: the optimizer is nil")
	assert.EqualError(t, s.Unscale(sgd), "amp: GradScaler: the optimizer is nil")
	_, err = s.Step(nil)
	assert.EqualError(t, err, "amp: GradScaler: the optimizer is nil")
}
