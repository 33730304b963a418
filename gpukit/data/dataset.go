package data

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpumem/course/gpukit/internal/hostmem"
)

// Item is one example: float32 values and their shape (row-major).
type Item struct {
	Shape []int
	Data  []float32
}

// Dataset is an indexed collection of items (torch.utils.data.Dataset).
// Item must be safe to call from several goroutines at once: a DataLoader's
// workers call it concurrently.
type Dataset interface {
	Len() int
	Item(i int) (Item, error)
}

// ItemReader is implemented by data sets that read consecutive items
// straight into the caller's memory (ShardDataset, TensorDataset). With the
// default collate the loader fills each batch through it: one read per run
// of consecutive indices and no allocation per item.
type ItemReader interface {
	Dataset
	ItemShape() []int
	ReadItems(first, n int, dst []float32) error
}

// TensorDataset serves the rows of one float32 array of shape
// [n, itemShape...]: item i is row i (torch.utils.data.TensorDataset over
// one tensor). Items share the array's memory; do not change it while a
// loader reads it.
type TensorDataset struct {
	data      []float32
	itemShape []int
	itemSize  int
	n         int
}

// NewTensorDataset returns the rows of data seen as an array of the given
// shape; shape[0] is the number of items. The product of shape must equal
// len(data).
func NewTensorDataset(data []float32, shape ...int) (*TensorDataset, error) {
	if len(shape) == 0 {
		return nil, fmt.Errorf("data: NewTensorDataset: shape needs at least the item count")
	}
	size, err := numel(shape[1:])
	if err != nil {
		return nil, fmt.Errorf("data: NewTensorDataset: %w", err)
	}
	if shape[0] < 0 || (size > 0 && shape[0] > math.MaxInt/size) || shape[0]*size != len(data) {
		return nil, fmt.Errorf("data: NewTensorDataset: shape %v holds %v values, data has %d", shape, describeProduct(shape), len(data))
	}
	return &TensorDataset{data: data, itemShape: slices.Clone(shape[1:]), itemSize: size, n: shape[0]}, nil
}

func describeProduct(shape []int) string {
	n, err := numel(shape)
	if err != nil {
		return "too many"
	}
	return fmt.Sprint(n)
}

// Len returns the number of items.
func (d *TensorDataset) Len() int { return d.n }

// Item returns row i.
func (d *TensorDataset) Item(i int) (Item, error) {
	if i < 0 || i >= d.n {
		return Item{}, fmt.Errorf("data: TensorDataset: index %d out of range [0, %d)", i, d.n)
	}
	return Item{Shape: d.itemShape, Data: d.data[i*d.itemSize : (i+1)*d.itemSize : (i+1)*d.itemSize]}, nil
}

// ItemShape returns the shape of every item.
func (d *TensorDataset) ItemShape() []int { return slices.Clone(d.itemShape) }

// ReadItems copies items first..first+n-1 into dst.
func (d *TensorDataset) ReadItems(first, n int, dst []float32) error {
	if first < 0 || n < 0 || first > d.n-n || len(dst) != n*d.itemSize {
		return fmt.Errorf("data: TensorDataset: ReadItems of items [%d, %d) into %d values; there are %d items of %d values", first, first+n, len(dst), d.n, d.itemSize)
	}
	copy(dst, d.data[first*d.itemSize:(first+n)*d.itemSize])
	return nil
}

// numel returns the product of shape, refusing negative dimensions and
// overflow.
func numel(shape []int) (int, error) {
	n := 1
	for _, s := range shape {
		if s < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if s != 0 && n > math.MaxInt/s {
			return 0, fmt.Errorf("shape %v has more elements than an int can count", shape)
		}
		n *= s
	}
	return n, nil
}

// FuncDataset computes its items on demand: item i is fill(i, dst) into a
// fresh slice of prod(shape) values. It holds nothing in memory, so it can
// stand for a data set of any size.
type FuncDataset struct {
	n     int
	shape []int
	size  int
	fill  func(i int, dst []float32)
}

// NewFuncDataset returns n items of the given shape computed by fill, which
// must be safe for concurrent use.
func NewFuncDataset(n int, shape []int, fill func(i int, dst []float32)) (*FuncDataset, error) {
	size, err := numel(shape)
	if err != nil {
		return nil, fmt.Errorf("data: NewFuncDataset: %w", err)
	}
	if n < 0 || fill == nil {
		return nil, fmt.Errorf("data: NewFuncDataset: %d items, fill %v: need n ≥ 0 and a fill function", n, fill != nil)
	}
	return &FuncDataset{n: n, shape: slices.Clone(shape), size: size, fill: fill}, nil
}

// Len returns the number of items.
func (d *FuncDataset) Len() int { return d.n }

// Item computes item i.
func (d *FuncDataset) Item(i int) (Item, error) {
	if i < 0 || i >= d.n {
		return Item{}, fmt.Errorf("data: FuncDataset: index %d out of range [0, %d)", i, d.n)
	}
	if err := hostmem.Check(fmt.Sprintf("data: FuncDataset: item %d", i), 4*int64(d.size)); err != nil {
		return Item{}, err
	}
	it := Item{Shape: d.shape, Data: make([]float32, d.size)}
	d.fill(i, it.Data)
	return it, nil
}

// ItemShape returns the shape of every item.
func (d *FuncDataset) ItemShape() []int { return slices.Clone(d.shape) }

// ReadItems computes items first..first+n-1 into dst.
func (d *FuncDataset) ReadItems(first, n int, dst []float32) error {
	if first < 0 || n < 0 || first > d.n-n || len(dst) != n*d.size {
		return fmt.Errorf("data: FuncDataset: ReadItems of items [%d, %d) into %d values; there are %d items of %d values", first, first+n, len(dst), d.n, d.size)
	}
	for k := range n {
		d.fill(first+k, dst[k*d.size:(k+1)*d.size:(k+1)*d.size])
	}
	return nil
}
