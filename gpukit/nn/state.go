package nn

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpumem/course/gpukit/internal/isnil"
	"github.com/gpumem/course/gpukit/nn/safetensors"
	"github.com/gpumem/course/gpukit/tensor"
)

// StateDict returns m's parameters and persistent buffers with their
// dotted names, module by module (model.state_dict()).
func StateDict(m Module) []Named {
	var out []Named
	seen := map[*tensor.Tensor]bool{}
	walk(m, "", func(prefix string, m Module) {
		ms := m.Members()
		for _, n := range append(slices.Clone(ms.Params), ms.Buffers...) {
			if n.Tensor != nil && !seen[n.Tensor] {
				seen[n.Tensor] = true
				out = append(out, Named{Name: prefix + n.Name, Tensor: n.Tensor})
			}
		}
	})
	return out
}

// SaveFile writes m's state dict to path as a .safetensors file (with
// metadata {"format": "pt"}, as safetensors.torch.save_file writes),
// through a temporary file renamed into place.
func SaveFile(path string, m Module) error {
	if isnil.Nil(m) {
		return errors.New("nn: SaveFile: the module is nil")
	}
	return SaveTensors(path, StateDict(m), map[string]string{"format": "pt"})
}

// SaveTensors writes named tensors to path as a .safetensors file.
func SaveTensors(path string, named []Named, metadata map[string]string) error {
	ts := make([]safetensors.Tensor, 0, len(named))
	for _, n := range named {
		t, err := safetensors.FromTensor(n.Name, n.Tensor)
		if err != nil {
			return fmt.Errorf("nn: saving %s: %w", path, err)
		}
		ts = append(ts, t)
	}
	if err := safetensors.Write(path, ts, metadata); err != nil {
		return fmt.Errorf("nn: %w", err)
	}
	return nil
}

// LoadError lists what did not match when loading a state dict, in
// PyTorch's words.
type LoadError struct {
	Module     string
	Missing    []string
	Unexpected []string
	Mismatched []string // one message per key
}

func (e *LoadError) Error() string {
	var msgs []string
	quote := func(ks []string) string {
		q := make([]string, len(ks))
		for i, k := range ks {
			q[i] = `"` + k + `"`
		}
		return strings.Join(q, ", ")
	}
	if len(e.Missing) > 0 {
		msgs = append(msgs, fmt.Sprintf("Missing key(s) in state_dict: %s. ", quote(e.Missing)))
	}
	if len(e.Unexpected) > 0 {
		msgs = append(msgs, fmt.Sprintf("Unexpected key(s) in state_dict: %s. ", quote(e.Unexpected)))
	}
	msgs = append(msgs, e.Mismatched...)
	return fmt.Sprintf("nn: Error(s) in loading state_dict for %s:\n\t%s", e.Module, strings.Join(msgs, "\n\t"))
}

// torchSize formats a shape as PyTorch prints it: torch.Size([3, 4]).
func torchSize(shape []int) string {
	parts := make([]string, len(shape))
	for i, s := range shape {
		parts[i] = fmt.Sprint(s)
	}
	return "torch.Size([" + strings.Join(parts, ", ") + "])"
}

// LoadFile loads the state dict in path into m (model.load_state_dict
// with strict=True). Every key and shape is checked and every tensor read
// before anything is copied: on any error (a *LoadError for missing,
// unexpected or misshaped keys; a safetensors error naming the file for a
// corrupt or truncated one) m is left as it was. Floating-point values
// are converted to the parameter's dtype, as copy_ does.
func LoadFile(path string, m Module) error {
	if isnil.Nil(m) {
		return errors.New("nn: LoadFile: the module is nil")
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return fmt.Errorf("nn: %w", err)
	}
	defer f.Close()
	return LoadTensors(f, StateDict(m), strings.TrimPrefix(fmt.Sprintf("%T", m), "*nn."))
}

// LoadTensors checks the tensors of f against want (names and shapes) and
// copies them into want's tensors, all or nothing. module names the
// receiver in the error message.
func LoadTensors(f *safetensors.File, want []Named, module string) error {
	lerr := &LoadError{Module: module}
	inFile := map[string]safetensors.Info{}
	for _, t := range f.Tensors {
		inFile[t.Name] = t
	}
	wanted := map[string]bool{}
	for _, n := range want {
		wanted[n.Name] = true
		info, ok := inFile[n.Name]
		if !ok {
			lerr.Missing = append(lerr.Missing, n.Name)
			continue
		}
		if !slices.Equal(info.Shape, n.Tensor.Shape()) {
			lerr.Mismatched = append(lerr.Mismatched, fmt.Sprintf(
				"size mismatch for %s: copying a param with shape %s from checkpoint, the shape in current model is %s.",
				n.Name, torchSize(info.Shape), torchSize(n.Tensor.Shape())))
			continue
		}
		dt, _ := safetensors.TensorDtype(info.Dtype)
		if dt.IsFloat() != n.Tensor.Dtype().IsFloat() || !dt.IsFloat() && dt != n.Tensor.Dtype() {
			lerr.Mismatched = append(lerr.Mismatched, fmt.Sprintf(
				"dtype mismatch for %s: copying a param of dtype %s from checkpoint, the dtype in current model is %s.",
				n.Name, info.Dtype, n.Tensor.Dtype()))
		}
	}
	for _, t := range f.Tensors {
		if !wanted[t.Name] {
			lerr.Unexpected = append(lerr.Unexpected, t.Name)
		}
	}
	slices.Sort(lerr.Unexpected)
	if len(lerr.Missing)+len(lerr.Unexpected)+len(lerr.Mismatched) > 0 {
		return lerr
	}

	staged := make([]*tensor.Tensor, 0, len(want))
	defer func() {
		for _, s := range staged {
			s.Release()
		}
	}()
	for _, n := range want {
		h, err := f.Load(inFile[n.Name])
		if err != nil {
			return fmt.Errorf("nn: %w", err)
		}
		staged = append(staged, h)
	}
	var err error
	tensor.NoGrad(func() {
		err = tensor.Try(func() {
			for i, n := range want {
				n.Tensor.CopyFrom(staged[i])
			}
		})
	})
	if err != nil {
		return fmt.Errorf("nn: loading %s: %w", f.Path, err)
	}
	return nil
}
