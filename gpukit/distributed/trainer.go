package distributed

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// Stage is how much of the model states the ranks shard (ZeRO's stages).
type Stage int

const (
	// DDP replicates everything (stage 0, DistributedDataParallel):
	// gradients are all-reduced in buckets during backward.
	DDP Stage = iota
	// ZeRO1 shards the optimizer states (P_os): gradients are
	// reduce-scattered, each rank updates its shard, and the updated
	// 16-bit parameters are all-gathered.
	ZeRO1
	// ZeRO2 also shards the gradients (P_os+g, FSDP's SHARD_GRAD_OP): a
	// layer's full gradient lives only until it is reduce-scattered.
	ZeRO2
	// ZeRO3 also shards the parameters (P_os+g+p, FSDP's FULL_SHARD):
	// each layer's parameters are all-gathered just before its forward
	// and again before its backward, and freed after each.
	ZeRO3
)

func (s Stage) String() string {
	switch s {
	case DDP:
		return "DDP"
	case ZeRO1, ZeRO2, ZeRO3:
		return fmt.Sprintf("ZeRO-%d", int(s))
	}
	return fmt.Sprintf("Stage(%d)", int(s))
}

// Prefetch is when stage 3 all-gathers a layer's parameters.
type Prefetch int

const (
	// GatherOnDemand gathers each layer just before its forward and again
	// just before its backward: the layer's compute waits for its gather,
	// and only one gathered layer is held at a time. gpukit's default,
	// not FSDP's.
	GatherOnDemand Prefetch = iota
	// PrefetchNext issues the gather of the next layer in the pass (l+1
	// in forward, l-1 in backward) before the current layer computes, so
	// that it overlaps that computation, and never more than one layer
	// ahead: two gathered layers are held at once, the one computing and
	// the one prefetched. This is what FSDP does by default: in backward
	// backward_prefetch=BackwardPrefetch.BACKWARD_PRE ("prefetches the
	// next set of parameters before the current set of parameter's
	// gradient computation", torch/distributed/fsdp/api.py), in forward
	// the CPU thread issuing the next unit's all-gather while the GPU
	// still computes (forward_prefetch=False), both held to one unit
	// ahead by limit_all_gathers=True (the rate limiter: memory of "only
	// two consecutive FSDP instances") and backward_prefetch_limit =
	// forward_prefetch_limit = 1 (torch/distributed/fsdp/
	// fully_sharded_data_parallel.py). The gather issued ahead starts
	// once the layer before the current one has computed (its gathered
	// copy's memory is then free), as the rate limiter waits for that
	// layer's free event. Nothing is prefetched across the turn from
	// forward to backward.
	PrefetchNext
)

func (p Prefetch) String() string {
	switch p {
	case GatherOnDemand:
		return "gather on demand"
	case PrefetchNext:
		return "prefetch next layer"
	}
	return fmt.Sprintf("Prefetch(%d)", int(p))
}

// Optimizer selects the update rule.
type Optimizer int

const (
	// Adam keeps exp_avg and exp_avg_sq in float32 (with the float32
	// master weights of mixed precision: K = 12 bytes per parameter).
	Adam Optimizer = iota
	// SGD keeps a float32 momentum buffer when Momentum > 0 (K = 8 with
	// master weights, 4 without momentum).
	SGD
)

func (o Optimizer) String() string {
	if o == SGD {
		return "sgd"
	}
	return "adam"
}

// DefaultBucketCapMB is DistributedDataParallel's bucket_cap_mb: buckets
// of 25 MiB (kDefaultBucketBytesCap in torch/csrc/distributed/c10d/
// reducer.hpp), after a first bucket of 1 MiB (kDefaultFirstBucketBytes).
const (
	DefaultBucketCapMB = 25
	firstBucketBytes   = 1 << 20
)

// Config configures a Trainer.
type Config struct {
	Stage Stage
	// Dtype is the parameters' and gradients' dtype. Float32 (the zero
	// value) trains in full precision: the parameters are their own
	// master copy. Float16 or BFloat16 is mixed precision as ZeRO runs it:
	// 16-bit parameters and gradients, float32 master weights and
	// optimizer state.
	Dtype     tensor.Dtype
	Optimizer Optimizer
	// Adam's hyperparameters (zero value: optim.DefaultAdam()). Weight
	// decay is Adam's L2 term, not AdamW's.
	Adam optim.AdamConfig
	// SGD's hyperparameters (zero value: learning rate 1e-3, no
	// momentum). Dampening and Nesterov are not supported.
	SGD optim.SGDConfig
	// BucketCapMB is DDP's bucket_cap_mb (0: DefaultBucketCapMB).
	BucketCapMB float64
	// GradientAsBucketView makes DDP's gradients views into its bucket
	// buffers (gradient_as_bucket_view=True) instead of separate tensors
	// copied in and out of them (PyTorch's default, which holds the
	// gradients twice).
	GradientAsBucketView bool
	// DeepSpeed runs stages 1 and 2 as DeepSpeed's ZeRO optimizer does
	// with its defaults (deepspeed/runtime/zero/stage_1_and_2.py), where
	// the paper's accounting leaves out two things. Backward reduces
	// through a bucket of reduce_bucket_size = 5e8 elements of the 16-bit
	// dtype (setup_buckets; overlap_comm is off below stage 3, so one),
	// allocated for backward and freed after it. The step flattens the
	// rank's partition of the gradients (_flatten_dense_tensors
	// concatenates: a 16-bit copy) and casts it to float32
	// (flat_grad_partition.to(...)) while the gradients are still held,
	// then frees the gradients (free_grad_in_param_list) before Adam's
	// update; a stage-1 rank has kept only its partition of each
	// gradient after its reduction. The all-gather bucket of 5e8
	// elements costs no memory: the parameters are gathered in place
	// (all_gather_dp_groups).
	DeepSpeed bool
	// ReduceBucketSize is DeepSpeed's reduce_bucket_size in elements
	// (0: its default, 5e8), with DeepSpeed only.
	ReduceBucketSize int
	// Prefetch is when ZeRO-3 gathers a layer's parameters (zero value:
	// GatherOnDemand); stage 3 only.
	Prefetch Prefetch
}

// deepSpeedReduceBucket is DeepSpeed's default reduce_bucket_size, in
// elements (deepspeed/runtime/zero/config.py).
const deepSpeedReduceBucket = 500_000_000

// layerSpec is one Linear layer as one flat parameter (FSDP's
// FlatParameter): weight [out, in] then bias [out], padded with zeros to
// a multiple of the group's size so that it shards evenly.
type layerSpec struct {
	in, out int
	bias    bool
	numel   int // out·in (+ out)
	padded  int // numel rounded up to a multiple of N (stages 1-3)
	shard   int // padded / N
}

// unit is one rank's tensors of one layer.
type unit struct {
	param  *tensor.Tensor // working dtype: full flat (stages 0-2) or this rank's shard (3)
	grad   *tensor.Tensor // full flat (stages 0, 1) or shard (2, 3); nil before the first backward
	master *tensor.Tensor // float32, what the rank owns; nil in full precision
	s1, s2 *tensor.Tensor // optimizer state (exp_avg, exp_avg_sq; momentum), float32
}

// rank is one card's share. What a rank owns of every layer (the whole
// layer at stage 0, its shard at stages 1-3) lives in one flat buffer
// per kind of state, the layers' pieces being views into it, as
// DeepSpeed keeps a rank's partition flat: one block per state instead
// of one per layer, so that the allocator's rounding stays negligible
// even for the small shards of a thousand cards.
type rank struct {
	d       *device.Device
	units   []*unit
	buckets []*tensor.Tensor // DDP's bucket buffers, in bucket order
	flats   []*tensor.Tensor // the flat buffers the units' views point into

	gradFlat, s1Flat, s2Flat *tensor.Tensor // filled on first use
}

// owned returns what a rank owns of layer l (elements) and where it
// starts in the rank's flat buffers.
func (t *Trainer) owned(l int) (offset, n int) {
	for i := range l {
		offset += t.ownSize(i)
	}
	return offset, t.ownSize(l)
}

func (t *Trainer) ownSize(l int) int {
	if t.cfg.Stage == DDP {
		return t.layers[l].numel
	}
	return t.layers[l].shard
}

// slot returns a view of layer l's piece of a rank's flat buffer *flat,
// allocating the buffer (zeros, for every layer at once) on first use.
func (t *Trainer) slot(rk *rank, flat **tensor.Tensor, dt tensor.Dtype, l int) *tensor.Tensor {
	if *flat == nil {
		var total int
		for i := range t.layers {
			total += t.ownSize(i)
		}
		*flat = tensor.Zeros([]int{total}, dt, tensor.On(rk.d))
		rk.flats = append(rk.flats, *flat)
	}
	off, n := t.owned(l)
	return (*flat).Narrow(0, off, n)
}

// bucket is a run of layers, in backward order, whose gradients DDP
// all-reduces together.
type bucket struct {
	layers []int // layer indices, last layer first
	offset []int // each layer's offset in the bucket buffer
	numel  int
}

// Trainer trains a multilayer perceptron (Linear layers with ReLU
// between them, a mean squared error loss) with data parallelism over a
// Group, at one of ZeRO's stages. Each rank computes the forward and
// backward of its share of the batch by hand (the layer's inputs are
// what it saves), so that ZeRO-3 can free the gathered parameters after
// each layer as FSDP does; the collectives move the gradients and
// parameters between the ranks. Between two collectives the ranks run
// on up to GOMAXPROCS goroutines, as independent as their processes
// would be; each card keeps its own clock, and the collectives
// synchronize them. A Trainer is not safe for concurrent use.
type Trainer struct {
	g       *Group
	cfg     Config
	layers  []layerSpec
	ranks   []*rank
	buckets []bucket
	steps   int
	broken  error
	last    []StepStats
}

// StepStats is what one rank measured over one Step.
type StepStats struct {
	// Allocated is the card's allocated memory after the step (the
	// caller's inputs included, activations and temporaries freed).
	Allocated int64
	// Buckets is the part of it that DDP's bucket buffers hold when they
	// are not the gradients themselves.
	Buckets int64
	// Peak is the allocator's peak of allocated memory during the step;
	// PeakReserved the peak of reserved memory.
	Peak, PeakReserved int64
	// Time is the step's modelled duration on the card's default stream;
	// Comm the time its communication stream was busy, CommBytes what
	// the rank sent.
	Time, Comm time.Duration
	CommBytes  int64
	// Gathered is the most layers whose ZeRO-3 gathered parameters the
	// card held at once: 1 gathering on demand, 2 prefetching (0 at
	// stages 0-2).
	Gathered int
}

// NewTrainer places model on every rank of g according to cfg. model is
// an nn.Sequential of Linear layers with a ReLU between each two
// (Linear, ReLU, Linear, …, Linear). Its values are copied to the ranks
// (DDP and ZeRO 1-2 broadcast rank 0's copy, as DistributedDataParallel
// does; ZeRO-3 gives each rank its shard); a model on a meta card has
// none, and its ranks must be meta cards. model itself is left as it is.
func NewTrainer(g *Group, model *nn.Sequential, cfg Config) (*Trainer, error) {
	if g == nil {
		return nil, errorf("NewTrainer: nil group")
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	linears, err := linearsOf(model)
	if err != nil {
		return nil, err
	}
	metaModel := linears[0].Weight.IsMeta()
	if metaModel && g.devs[0].Kind() != device.Meta {
		return nil, errorf("NewTrainer: the model lives on a meta card and holds no values; train it on meta cards, or build it on a sim card or the host")
	}
	N := g.Size()
	t := &Trainer{g: g, cfg: cfg, ranks: make([]*rank, N)}
	for _, l := range linears {
		s := layerSpec{in: l.In, out: l.Out, bias: l.Bias != nil}
		s.numel = l.In * l.Out
		if s.bias {
			s.numel += l.Out
		}
		s.padded = s.numel
		if cfg.Stage != DDP {
			s.padded = (s.numel + N - 1) / N * N
		}
		s.shard = s.padded / N
		t.layers = append(t.layers, s)
	}
	for r := range N {
		t.ranks[r] = &rank{d: g.devs[r], units: make([]*unit, len(t.layers))}
	}
	err = tensor.Try(func() {
		tensor.NoGrad(func() {
			flats := make([]rankFlats, N)
			for i, l := range linears {
				var vals []float32
				if !metaModel {
					vals = flatValues(l, t.layers[i].padded)
				}
				t.place(i, vals, flats)
			}
			if cfg.Stage == DDP {
				t.makeBuckets()
			}
		})
	})
	if err != nil {
		t.Release()
		return nil, fmt.Errorf("distributed: NewTrainer: %w", err)
	}
	return t, nil
}

func (c *Config) check() error {
	switch {
	case c.Stage < DDP || c.Stage > ZeRO3:
		return errorf("NewTrainer: stage %d; use DDP (0), ZeRO1, ZeRO2 or ZeRO3", int(c.Stage))
	case c.Dtype != tensor.Float32 && c.Dtype != tensor.Float16 && c.Dtype != tensor.BFloat16:
		return errorf("NewTrainer: dtype %s; use Float32 (full precision), Float16 or BFloat16 (mixed precision)", c.Dtype)
	case c.Optimizer != Adam && c.Optimizer != SGD:
		return errorf("NewTrainer: unknown optimizer %d", int(c.Optimizer))
	case c.BucketCapMB < 0 || math.IsNaN(c.BucketCapMB) || math.IsInf(c.BucketCapMB, 0):
		return errorf("NewTrainer: bucket_cap_mb %v must be positive", c.BucketCapMB)
	case c.DeepSpeed && c.Stage != ZeRO1 && c.Stage != ZeRO2:
		return errorf("NewTrainer: DeepSpeed's defaults are modelled for stages 1 and 2 (stage_1_and_2.py), not %s", c.Stage)
	case c.ReduceBucketSize < 0 || (c.ReduceBucketSize > 0 && !c.DeepSpeed):
		return errorf("NewTrainer: reduce bucket size %d: use 0, or a positive size with DeepSpeed", c.ReduceBucketSize)
	case c.Prefetch != GatherOnDemand && c.Prefetch != PrefetchNext:
		return errorf("NewTrainer: unknown prefetch %d; use GatherOnDemand or PrefetchNext", int(c.Prefetch))
	case c.Prefetch == PrefetchNext && c.Stage != ZeRO3:
		return errorf("NewTrainer: prefetching gathers ZeRO-3's parameters ahead; %s gathers none per layer", c.Stage)
	}
	if c.DeepSpeed && c.ReduceBucketSize == 0 {
		c.ReduceBucketSize = deepSpeedReduceBucket
	}
	if c.BucketCapMB == 0 {
		c.BucketCapMB = DefaultBucketCapMB
	}
	if c.Optimizer == Adam {
		if c.Adam == (optim.AdamConfig{}) {
			c.Adam = optim.DefaultAdam()
		}
		if _, err := optim.NewAdam([]*tensor.Tensor{tensor.Zeros([]int{1}, tensor.RequiresGrad())}, c.Adam); err != nil {
			return errorf("NewTrainer: %s", trimOptim(err))
		}
		return nil
	}
	if c.SGD == (optim.SGDConfig{}) {
		c.SGD = optim.DefaultSGD()
	}
	if c.SGD.Nesterov || c.SGD.Dampening != 0 {
		return errorf("NewTrainer: SGD with dampening or Nesterov momentum is not supported")
	}
	if _, err := optim.NewSGD([]*tensor.Tensor{tensor.Zeros([]int{1}, tensor.RequiresGrad())}, c.SGD); err != nil {
		return errorf("NewTrainer: %s", trimOptim(err))
	}
	return nil
}

// trimOptim drops optim's prefixes from the refusal of a configuration
// (the trainer has no parameter groups).
func trimOptim(err error) string {
	s := strings.TrimPrefix(err.Error(), "optim: ")
	return strings.TrimPrefix(s, "parameter group 0: ")
}

// linearsOf checks that model is Linear (ReLU Linear)* with matching
// sizes and returns its Linear layers.
func linearsOf(model *nn.Sequential) ([]*nn.Linear, error) {
	if model == nil || len(model.Layers) == 0 {
		return nil, errorf("NewTrainer: the model has no layers")
	}
	shape := "the trainer runs Linear layers with a ReLU between each two (Linear, ReLU, Linear, …, Linear)"
	var ls []*nn.Linear
	for i, m := range model.Layers {
		if i%2 == 1 {
			if _, ok := m.(*nn.ReLU); !ok {
				return nil, errorf("NewTrainer: layer %d is %T, not ReLU; %s", i, m, shape)
			}
			continue
		}
		l, ok := m.(*nn.Linear)
		if !ok {
			return nil, errorf("NewTrainer: layer %d is %T, not Linear; %s", i, m, shape)
		}
		if l.Weight == nil || l.Weight.Released() || (l.Bias != nil && l.Bias.Released()) {
			return nil, errorf("NewTrainer: layer %d's parameters were released", i)
		}
		if len(ls) > 0 && ls[len(ls)-1].Out != l.In {
			return nil, errorf("NewTrainer: layer %d takes %d features but the layer before gives %d", i, l.In, ls[len(ls)-1].Out)
		}
		if len(ls) > 0 && l.Weight.IsMeta() != ls[0].Weight.IsMeta() {
			return nil, errorf("NewTrainer: layer %d is on %s and layer 0 on %s; build the model in one place", i, l.Weight.DeviceName(), ls[0].Weight.DeviceName())
		}
		ls = append(ls, l)
	}
	if len(model.Layers)%2 == 0 {
		return nil, errorf("NewTrainer: the model ends with a ReLU; %s", shape)
	}
	return ls, nil
}

// flatValues returns l's weight then bias as float32, padded with zeros.
func flatValues(l *nn.Linear, padded int) []float32 {
	out := make([]float32, 0, padded)
	for _, v := range l.Weight.Float64s() {
		out = append(out, float32(v))
	}
	if l.Bias != nil {
		for _, v := range l.Bias.Float64s() {
			out = append(out, float32(v))
		}
	}
	return append(out, make([]float32, padded-len(out))...)
}

func (t *Trainer) mixed() bool { return t.cfg.Dtype != tensor.Float32 }

// place puts layer i on every rank, from vals (nil on meta cards).
func (t *Trainer) place(i int, vals []float32, flats []rankFlats) {
	s, N := t.layers[i], t.g.Size()
	on := func(r int, data []float32, n int) *tensor.Tensor {
		if data == nil {
			return tensor.Zeros([]int{n}, tensor.On(t.ranks[r].d))
		}
		return tensor.FromSlice(data, []int{n}, tensor.On(t.ranks[r].d))
	}
	if t.cfg.Stage == ZeRO3 {
		for r, rk := range t.ranks {
			var part []float32
			if vals != nil {
				part = vals[r*s.shard : (r+1)*s.shard]
			}
			x := on(r, part, s.shard)
			u := &unit{param: t.slot(rk, &flats[r].param, t.cfg.Dtype, i)}
			u.param.CopyFrom(x)
			if t.mixed() {
				u.master = t.slot(rk, &flats[r].master, tensor.Float32, i)
				u.master.CopyFrom(x)
			}
			x.Release()
			rk.units[i] = u
		}
		return
	}
	// Rank 0 holds the values and broadcasts them, in float32.
	full := make([]*tensor.Tensor, N)
	for r := range N {
		if r == 0 {
			full[r] = on(r, vals, s.padded)
		} else {
			full[r] = on(r, nil, s.padded)
		}
	}
	must(t.g.Broadcast(full, 0)).Wait()
	for r, rk := range t.ranks {
		u := &unit{param: full[r].ToDtype(t.cfg.Dtype)}
		if t.mixed() {
			off, n := 0, s.numel
			if t.cfg.Stage != DDP {
				off, n = r*s.shard, s.shard
			}
			own := full[r].Narrow(0, off, n)
			u.master = t.slot(rk, &flats[r].master, tensor.Float32, i)
			u.master.CopyFrom(own)
			own.Release()
		}
		full[r].Release()
		rk.units[i] = u
	}
}

// rankFlats holds a rank's flat buffers while NewTrainer fills them.
type rankFlats struct{ param, master *tensor.Tensor }

// makeBuckets assigns the layers to DDP buckets in backward order, as
// PyTorch's compute_bucket_assignment_by_size does: a bucket closes
// once it holds at least its limit, 1 MiB for the first and
// bucket_cap_mb after; a layer is never split. Each rank allocates the
// buffers now, as the Reducer does when DDP is built.
func (t *Trainer) makeBuckets() {
	limit := int64(firstBucketBytes)
	size := int64(t.cfg.Dtype.Size())
	var cur bucket
	for i := len(t.layers) - 1; i >= 0; i-- {
		cur.layers = append(cur.layers, i)
		cur.offset = append(cur.offset, cur.numel)
		cur.numel += t.layers[i].numel
		if int64(cur.numel)*size >= limit || i == 0 {
			t.buckets = append(t.buckets, cur)
			cur = bucket{}
			limit = int64(t.cfg.BucketCapMB * float64(1<<20))
		}
	}
	for _, rk := range t.ranks {
		for _, b := range t.buckets {
			buf := tensor.Zeros([]int{b.numel}, t.cfg.Dtype, tensor.On(rk.d))
			rk.buckets = append(rk.buckets, buf)
			if t.cfg.GradientAsBucketView {
				for j, l := range b.layers {
					rk.units[l].grad = buf.Narrow(0, b.offset[j], t.layers[l].numel)
				}
			}
		}
	}
}

// Buckets returns DDP's buckets as lists of layer indices, in the order
// they are all-reduced (the last layer's first).
func (t *Trainer) Buckets() [][]int {
	var out [][]int
	for _, b := range t.buckets {
		out = append(out, append([]int{}, b.layers...))
	}
	return out
}

// Last returns each rank's measurements of the last Step.
func (t *Trainer) Last() []StepStats { return append([]StepStats{}, t.last...) }

// Group returns the trainer's process group.
func (t *Trainer) Group() *Group { return t.g }

// Release frees every tensor the trainer holds on the ranks.
func (t *Trainer) Release() {
	for _, rk := range t.ranks {
		if rk == nil {
			continue
		}
		for _, u := range rk.units {
			if u == nil {
				continue
			}
			release(u.param, u.grad, u.master, u.s1, u.s2)
			*u = unit{}
		}
		release(rk.buckets...)
		release(rk.flats...)
		rk.buckets, rk.flats = nil, nil
	}
}

func release(ts ...*tensor.Tensor) {
	for _, t := range ts {
		if t != nil && !t.Released() {
			t.Release()
		}
	}
}

// Parameters returns each layer's parameters (weight then bias, flat)
// as rank r holds them in the working dtype; at ZeRO-3, where no rank
// holds a whole layer, the ranks' shards put together. It fails on meta
// cards, which hold no values.
func (t *Trainer) Parameters(r int) ([][]float64, error) {
	return t.values(r, func(u *unit) *tensor.Tensor { return u.param }, t.cfg.Stage == ZeRO3)
}

// MasterParameters returns each layer's float32 master weights, the
// ranks' shards put together (stage 0: rank 0's copy); in full precision
// the parameters are their own master.
func (t *Trainer) MasterParameters() ([][]float64, error) {
	if !t.mixed() {
		return t.Parameters(0)
	}
	return t.values(0, func(u *unit) *tensor.Tensor { return u.master }, t.cfg.Stage != DDP)
}

func (t *Trainer) values(r int, of func(*unit) *tensor.Tensor, sharded bool) ([][]float64, error) {
	if r < 0 || r >= len(t.ranks) {
		return nil, errorf("Parameters: rank %d of a group of %d", r, len(t.ranks))
	}
	if t.ranks[r].d.Kind() == device.Meta {
		return nil, errorf("Parameters: %s is a meta card and holds no values", t.ranks[r].d.Name())
	}
	out := make([][]float64, len(t.layers))
	for l, s := range t.layers {
		if !sharded {
			out[l] = of(t.ranks[r].units[l]).Float64s()[:s.numel]
			continue
		}
		for _, rk := range t.ranks {
			out[l] = append(out[l], of(rk.units[l]).Float64s()...)
		}
		out[l] = out[l][:s.numel]
	}
	return out, nil
}
