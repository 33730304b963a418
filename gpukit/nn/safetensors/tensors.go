package safetensors

import (
	"fmt"

	"github.com/gpumem/course/gpukit/tensor"
)

var names = map[tensor.Dtype]string{
	tensor.Float64: "F64", tensor.Float32: "F32", tensor.Float16: "F16", tensor.BFloat16: "BF16",
	tensor.Int64: "I64", tensor.Int32: "I32", tensor.Bool: "BOOL",
}

// DtypeName is the format's name of dt ("F32" for Float32).
func DtypeName(dt tensor.Dtype) (string, error) {
	if n, ok := names[dt]; ok {
		return n, nil
	}
	return "", fmt.Errorf("safetensors: dtype %s has no safetensors name", dt)
}

// TensorDtype is the tensor dtype of a format name ("F32" → Float32).
func TensorDtype(name string) (tensor.Dtype, error) {
	for dt, n := range names {
		if n == name {
			return dt, nil
		}
	}
	return 0, fmt.Errorf("safetensors: unknown dtype %q", name)
}

// FromTensor copies t's values to the host and returns them as a Tensor
// to Write. A tensor on a meta device has no values and is refused.
func FromTensor(name string, t *tensor.Tensor) (Tensor, error) {
	dt, err := DtypeName(t.Dtype())
	if err != nil {
		return Tensor{}, err
	}
	if t.IsMeta() {
		return Tensor{}, fmt.Errorf("safetensors: %s is on %s, which holds no values", name, t.DeviceName())
	}
	var data []byte
	err = tensor.Try(func() {
		tensor.NoGrad(func() {
			h := t.ToHost(false, false)
			defer h.Release()
			c := h.Contiguous()
			defer c.Release()
			size := int(c.Dtype().Size())
			off := c.StorageOffset() * size
			data = append([]byte(nil), c.Storage().Bytes()[off:off+c.Numel()*size]...)
		})
	})
	if err != nil {
		return Tensor{}, fmt.Errorf("safetensors: %s: %w", name, err)
	}
	return Tensor{Name: name, Dtype: dt, Shape: t.Shape(), Data: data}, nil
}

// Load reads tensor info into a new host tensor of its dtype and shape.
func (f *File) Load(info Info) (*tensor.Tensor, error) {
	dt, err := TensorDtype(info.Dtype)
	if err != nil {
		return nil, err
	}
	var t *tensor.Tensor
	if err := tensor.Try(func() { t = tensor.Empty(info.Shape, tensor.OnHost(false), dt) }); err != nil {
		return nil, fmt.Errorf("safetensors: %s: %s: %w", f.Path, info.Name, err)
	}
	if err := f.ReadInto(info, t.Storage().Bytes()[:t.Nbytes()]); err != nil {
		t.Release()
		return nil, err
	}
	return t, nil
}
