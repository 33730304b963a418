package optim

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/nn/safetensors"
	"github.com/gpumem/course/gpukit/tensor"
)

// An optimizer's state dict in a .safetensors file follows PyTorch's
// optimizer.state_dict(): tensors "state.<i>.<field>" for parameter i of
// Params() (Adam: step, a float32 scalar as in PyTorch, exp_avg,
// exp_avg_sq and, in a group with amsgrad, max_exp_avg_sq; SGD:
// momentum_buffer), and the metadata "optimizer" (the
// kind) and "param_groups" (PyTorch's list as JSON, each group with its
// hyperparameters and the indices of its parameters).

type groupJSON struct {
	LR          float64    `json:"lr"`
	Betas       [2]float64 `json:"betas,omitzero"`
	Eps         float64    `json:"eps,omitempty"`
	WeightDecay float64    `json:"weight_decay"`
	Amsgrad     bool       `json:"amsgrad,omitempty"`
	Momentum    float64    `json:"momentum,omitempty"`
	Dampening   float64    `json:"dampening,omitempty"`
	Nesterov    bool       `json:"nesterov,omitempty"`
	Params      []int      `json:"params"`
}

func groupsMeta[C any](kind string, groups []Group[C], toJSON func(C) groupJSON) map[string]string {
	var gs []groupJSON
	i := 0
	for _, g := range groups {
		j := toJSON(g.Config)
		j.Params = []int{}
		for range g.Params {
			j.Params = append(j.Params, i)
			i++
		}
		gs = append(gs, j)
	}
	b, _ := json.Marshal(gs)
	return map[string]string{"optimizer": kind, "param_groups": string(b)}
}

// stateFile is a validated optimizer state file: its groups and, per
// parameter index, the host tensors of each field.
type stateFile struct {
	groups []groupJSON
	fields map[int]map[string]*tensor.Tensor
}

func (s *stateFile) release() {
	for _, fs := range s.fields {
		for _, t := range fs {
			t.Release()
		}
	}
}

// readState opens path and checks it against the optimizer: kind, group
// sizes, field names (those fields gives for the parameter's group, as
// the file describes it) and shapes. It reads every tensor to the host;
// on any error nothing is returned.
func readState[C any](path, kind string, groups []Group[C], fields func(groupJSON) []string) (*stateFile, error) {
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, fmt.Errorf("optim: %w", err)
	}
	defer f.Close()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("optim: loading %s: %s", path, fmt.Sprintf(format, args...))
	}
	if got := f.Metadata["optimizer"]; got != kind {
		return nil, bad("the file holds the state of %q, this optimizer is %s", got, kind)
	}
	s := &stateFile{fields: map[int]map[string]*tensor.Tensor{}}
	if err := json.Unmarshal([]byte(f.Metadata["param_groups"]), &s.groups); err != nil {
		return nil, bad("param_groups metadata: %v", err)
	}
	if len(s.groups) != len(groups) {
		return nil, bad("loaded state dict has a different number of parameter groups (%d, the optimizer has %d)", len(s.groups), len(groups))
	}
	var params []*tensor.Tensor
	var paramFields [][]string // the fields of each parameter, by its group
	for i, g := range groups {
		if len(s.groups[i].Params) != len(g.Params) {
			return nil, bad("loaded state dict contains a parameter group that doesn't match the size of optimizer's group (group %d: %d parameters, the optimizer's has %d)", i, len(s.groups[i].Params), len(g.Params))
		}
		params = append(params, g.Params...)
		for range g.Params {
			paramFields = append(paramFields, fields(s.groups[i]))
		}
	}
	ok := false
	defer func() {
		if !ok {
			s.release()
		}
	}()
	for _, info := range f.Tensors {
		rest, found := strings.CutPrefix(info.Name, "state.")
		idx, field, found2 := strings.Cut(rest, ".")
		i, err := strconv.Atoi(idx)
		if !found || !found2 || err != nil || i < 0 || i >= len(params) || !slices.Contains(paramFields[i], field) {
			want := paramFields[0]
			if err == nil && i >= 0 && i < len(params) {
				want = paramFields[i]
			}
			return nil, bad("unexpected key %q (expected state.<parameter index>.<%s>)", info.Name, strings.Join(want, "|"))
		}
		want := params[i].Shape()
		if field == "step" {
			want = []int{}
		}
		if !slices.Equal(info.Shape, want) {
			return nil, bad("size mismatch for %s: copying a tensor with shape %v from checkpoint, the shape in current optimizer is %v", info.Name, info.Shape, want)
		}
		t, err := f.Load(info)
		if err != nil {
			return nil, fmt.Errorf("optim: %w", err)
		}
		if err := checkValues(info.Name, field, t); err != nil {
			t.Release()
			return nil, bad("%v", err)
		}
		if s.fields[i] == nil {
			s.fields[i] = map[string]*tensor.Tensor{}
		}
		s.fields[i][field] = t
	}
	for i, fs := range s.fields {
		if len(fs) != len(paramFields[i]) {
			return nil, bad("parameter %d has %d of the state fields %v", i, len(fs), paramFields[i])
		}
	}
	ok = true
	return s, nil
}

// maxStep is the largest step count loaded: every integer up to it is
// exact in a float64, and β^step underflows to 0 long before it.
const maxStep = 1 << 53

// checkValues refuses loaded values that the update would turn into NaN
// or that no optimizer can have produced: a NaN or infinite element in
// any field, a negative exp_avg_sq (its square root is taken), and a step
// count that is not a whole number in [0, 2^53] (PyTorch keeps step as a
// float32 tensor, torch/optim/adam.py, and its bias corrections
// 1 − β^step divide by zero at step 0 only before the increment).
func checkValues(name, field string, t *tensor.Tensor) error {
	for i, v := range t.Float64s() {
		at := name
		if t.Dim() > 0 {
			at = fmt.Sprintf("%s[%d]", name, i)
		}
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return fmt.Errorf("%s is %v; a saved optimizer state is finite", at, v)
		case (field == "exp_avg_sq" || field == "max_exp_avg_sq") && v < 0:
			return fmt.Errorf("%s is %v; %s, a running mean of squares or its maximum, is never negative", at, v, field)
		case field == "step" && (v < 0 || v > maxStep || v != math.Trunc(v)):
			return fmt.Errorf("%s is %v; a step count is a whole number in [0, 2^53]", at, v)
		}
	}
	return nil
}

// deviceCopy returns a copy of host tensor h on p's device with p's dtype.
func deviceCopy(h, p *tensor.Tensor) *tensor.Tensor {
	var t *tensor.Tensor
	tensor.NoGrad(func() {
		t = tensor.ZerosLike(p)
		t.CopyFrom(h)
	})
	return t
}

// loadConfigs returns the configs of s's groups, each checked with
// validate.
func loadConfigs[C any](path string, s *stateFile, config func(groupJSON) C, validate func(C) error) ([]C, error) {
	cfgs := make([]C, len(s.groups))
	for gi, g := range s.groups {
		cfgs[gi] = config(g)
		if err := validate(cfgs[gi]); err != nil {
			return nil, fmt.Errorf("optim: loading %s: parameter group %d: %w", path, gi, err)
		}
	}
	return cfgs, nil
}

// loadStates builds on the device the state of each parameter of params
// that has fields in s (load puts it in next as soon as it holds device
// memory), all or nothing: on error it releases what was built.
func loadStates[S interface{ Release() }](path string, s *stateFile, params []*tensor.Tensor, load func(next map[*tensor.Tensor]S, fs map[string]*tensor.Tensor, p *tensor.Tensor)) (map[*tensor.Tensor]S, error) {
	next := map[*tensor.Tensor]S{}
	err := tensor.Try(func() {
		for i, fs := range s.fields {
			load(next, fs, params[i])
		}
	})
	if err != nil {
		releaseState(next)
		return nil, fmt.Errorf("optim: loading %s: %w", path, err)
	}
	return next, nil
}

func (c AdamConfig) groupJSON() groupJSON {
	return groupJSON{LR: c.LR, Betas: c.Betas, Eps: c.Eps, WeightDecay: c.WeightDecay, Amsgrad: c.Amsgrad}
}

func (g groupJSON) adam() AdamConfig {
	return AdamConfig{LR: g.LR, Betas: g.Betas, Eps: g.Eps, WeightDecay: g.WeightDecay, Amsgrad: g.Amsgrad}
}

func (c SGDConfig) groupJSON() groupJSON {
	return groupJSON{LR: c.LR, Momentum: c.Momentum, Dampening: c.Dampening, WeightDecay: c.WeightDecay, Nesterov: c.Nesterov}
}

func (g groupJSON) sgd() SGDConfig {
	return SGDConfig{LR: g.LR, Momentum: g.Momentum, Dampening: g.Dampening, WeightDecay: g.WeightDecay, Nesterov: g.Nesterov}
}

// SaveFile writes Adam's state dict to path (see the package doc).
func (o *Adam) SaveFile(path string) error {
	var named []nn.Named
	for i, p := range o.Params() {
		s, ok := o.state[p]
		if !ok {
			continue
		}
		step := tensor.Scalar(float64(s.step), tensor.OnHost(false))
		defer step.Release()
		pre := fmt.Sprintf("state.%d.", i)
		named = append(named, nn.Named{Name: pre + "step", Tensor: step},
			nn.Named{Name: pre + "exp_avg", Tensor: s.expAvg}, nn.Named{Name: pre + "exp_avg_sq", Tensor: s.expAvgSq})
		if s.maxExpAvgSq != nil {
			named = append(named, nn.Named{Name: pre + "max_exp_avg_sq", Tensor: s.maxExpAvgSq})
		}
	}
	return nn.SaveTensors(path, named, groupsMeta(o.kind(), o.groupList, AdamConfig.groupJSON))
}

func (o *Adam) kind() string {
	if o.decoupled {
		return "AdamW"
	}
	return "Adam"
}

// LoadFile replaces Adam's state and hyperparameters with those saved in
// path, after checking them all against this optimizer (kind, groups,
// shapes); on error the optimizer is left as it was.
func (o *Adam) LoadFile(path string) error {
	s, err := readState(path, o.kind(), o.groupList, func(g groupJSON) []string {
		if g.Amsgrad {
			return []string{"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
		}
		return []string{"step", "exp_avg", "exp_avg_sq"}
	})
	if err != nil {
		return err
	}
	defer s.release()
	cfgs, err := loadConfigs(path, s, groupJSON.adam, AdamConfig.validate)
	if err != nil {
		return err
	}
	next, err := loadStates(path, s, o.Params(), func(next map[*tensor.Tensor]*adamState, fs map[string]*tensor.Tensor, p *tensor.Tensor) {
		st := &adamState{step: int(fs["step"].Item())}
		next[p] = st
		st.expAvg, st.expAvgSq = deviceCopy(fs["exp_avg"], p), deviceCopy(fs["exp_avg_sq"], p)
		if m, ok := fs["max_exp_avg_sq"]; ok {
			st.maxExpAvgSq = deviceCopy(m, p)
		}
	})
	if err != nil {
		return err
	}
	o.Release()
	o.state = next
	o.setConfigs(cfgs)
	return nil
}

// SaveFile writes SGD's state dict to path (see the package doc).
func (o *SGD) SaveFile(path string) error {
	var named []nn.Named
	for i, p := range o.Params() {
		if b, ok := o.buf[p]; ok {
			named = append(named, nn.Named{Name: fmt.Sprintf("state.%d.momentum_buffer", i), Tensor: b})
		}
	}
	return nn.SaveTensors(path, named, groupsMeta("SGD", o.groupList, SGDConfig.groupJSON))
}

// LoadFile replaces SGD's momentum buffers and hyperparameters with those
// saved in path, all or nothing.
func (o *SGD) LoadFile(path string) error {
	s, err := readState(path, "SGD", o.groupList, func(groupJSON) []string { return []string{"momentum_buffer"} })
	if err != nil {
		return err
	}
	defer s.release()
	cfgs, err := loadConfigs(path, s, groupJSON.sgd, SGDConfig.validate)
	if err != nil {
		return err
	}
	next, err := loadStates(path, s, o.Params(), func(next map[*tensor.Tensor]*tensor.Tensor, fs map[string]*tensor.Tensor, p *tensor.Tensor) {
		next[p] = deviceCopy(fs["momentum_buffer"], p)
	})
	if err != nil {
		return err
	}
	o.Release()
	o.buf = next
	o.setConfigs(cfgs)
	return nil
}
