package tensor_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gpumem/course/gpukit/tensor"
)

// kernelNames records the names of the kernels ops launch.
type kernelNames struct {
	mu    sync.Mutex
	names []string
}

func (k *kernelNames) Allocated(*tensor.Storage) {}
func (k *kernelNames) Freed(*tensor.Storage)     {}
func (k *kernelNames) Launched(l tensor.Launch) {
	k.mu.Lock()
	k.names = append(k.names, l.Name)
	k.mu.Unlock()
}

// Every elementwise backward charges its derivative's kernel, then the
// product with the gradient: none computes for free on the modelled
// clock.
func TestElementwiseBackwardsChargeTheirKernels(t *testing.T) {
	dev := newDev(t)
	for _, c := range []struct {
		name string
		op   func(*tensor.Tensor) *tensor.Tensor
		want []string
	}{
		{"Abs", (*tensor.Tensor).Abs, []string{"AbsBackward", "Mul"}},
		{"Sigmoid", (*tensor.Tensor).Sigmoid, []string{"SigmoidBackward", "Mul"}},
		{"Tanh", (*tensor.Tensor).Tanh, []string{"TanhBackward", "Mul"}},
		{"Gelu", (*tensor.Tensor).Gelu, []string{"GeluBackward", "Mul"}},
		{"GeluTanh", (*tensor.Tensor).GeluTanh, []string{"GeluBackward", "Mul"}},
	} {
		x := tensor.Randn([]int{4, 8}, tensor.On(dev), tensor.WithGenerator(tensor.NewGenerator(1)), tensor.RequiresGrad())
		y := c.op(x)
		g := tensor.Ones(y.Shape(), tensor.On(dev))
		k := &kernelNames{}
		prev := tensor.SetObserver(k)
		y.Backward(tensor.WithGradient(g))
		tensor.SetObserver(prev)
		assert.Subset(t, k.names, c.want, "%s's backward launched %v", c.name, k.names)
		for _, z := range []*tensor.Tensor{x, y, g, x.Grad()} {
			z.Release()
		}
	}
}
