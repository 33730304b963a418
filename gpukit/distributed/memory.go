package distributed

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/device/sim"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

// Experiment describes a measurement of MeasureMemory: a model of Params
// parameters made of equal square Linear layers (no bias) of about
// LayerSize parameters each, trained with mixed precision (float16
// parameters and gradients, float32 master weights and optimizer state)
// on Devices meta cards at Stage.
type Experiment struct {
	Params    float64
	Devices   int
	Stage     Stage
	LayerSize int64 // parameters per layer; 0: Params/64
	Optimizer Optimizer
	// Card names the cards' profile. "" or "meta" is a card of unlimited
	// memory (the h100-80gb figures for its clocks); a profile name
	// ("h100-80gb", "a100-40gb", ...) also says whether the step fits.
	Card string
	// Tokens is the rows of each card's share of the batch (0: 1024).
	Tokens int
	// Node names a node profile ("dgx-h100", "pcie-node") to place the
	// cards on, CardsPerNode of them on each (0: the node's own); "" puts
	// every card in one node, joined by its peer links.
	Node         string
	CardsPerNode int
	// DeepSpeed runs stages 1 and 2 with DeepSpeed's defaults (see
	// Config.DeepSpeed) instead of the paper's accounting.
	DeepSpeed bool
	// Prefetch is when stage 3 gathers each layer (Config.Prefetch).
	Prefetch Prefetch
	// NCCLChannels, when above 0, gives every card NCCL's own buffers
	// for that many channels with NCCL's default sizes
	// (WithNCCLBuffers): device memory outside the caching allocator.
	NCCLChannels int
}

// Measurement is what one card measured over one step (the cards of a
// group are alike: each figure is the largest over the cards).
type Measurement struct {
	Stage   int    `json:"stage"`
	Devices int    `json:"devices"`
	Params  int64  `json:"params"` // the model built: Layers·Hidden²
	Layers  int    `json:"layers"`
	Hidden  int    `json:"hidden"`
	Tokens  int    `json:"tokens"`
	Card    string `json:"card"`
	// Nodes is how many nodes the cards sat on, CardsPerNode how many
	// on each (1 and Devices without Experiment.Node).
	Nodes        int  `json:"nodes"`
	CardsPerNode int  `json:"cards_per_node"`
	DeepSpeed    bool `json:"deepspeed,omitempty"`
	// Link names the ring's slowest link ("NVLink", "PCIe" or "network")
	// and LinkBandwidth its rate, bytes/s (Group.Link).
	Link          string  `json:"link"`
	LinkBandwidth float64 `json:"link_bandwidth"`
	// ModelStateBytes is the allocator's allocated memory after the step
	// with the batch freed: parameters, gradients and optimizer state.
	ModelStateBytes int64 `json:"model_state_bytes"`
	// PeakBytes is the allocator's peak of allocated memory during the
	// step: model states plus activations, gathered parameters,
	// communication buffers and temporaries. PeakReservedBytes adds
	// what the caching allocator held in its segments (fragmentation).
	PeakBytes         int64 `json:"peak_bytes"`
	PeakReservedBytes int64 `json:"peak_reserved_bytes"`
	// StepSeconds is the step's modelled time; CommSeconds the time the
	// card's communication stream was busy (overlapping compute in part).
	StepSeconds float64 `json:"step_seconds"`
	CommSeconds float64 `json:"comm_seconds"`
	CommBytes   int64   `json:"comm_bytes"`
	// Fits says whether the step ran on the named card without running
	// out of memory (nil on a card of unlimited memory); UsableBytes is
	// what its allocator may reserve (capacity less the CUDA context and
	// NCCL's buffers).
	Fits        *bool `json:"fits,omitempty"`
	UsableBytes int64 `json:"usable_bytes,omitempty"`
	// Gathered is the most layers whose stage-3 gathered parameters a
	// card held at once (StepStats.Gathered).
	Gathered int `json:"gathered,omitempty"`
	// The memory the allocator does not see. ContextBytes is the CUDA
	// context of the card's profile, NCCLBytes NCCL's buffers
	// (Experiment.NCCLChannels): neither is in PeakBytes or
	// PeakReservedBytes. DeviceUsedBytes is what nvidia-smi would show
	// for the process after the step, read from the card's MemInfo
	// (cudaMemGetInfo): the context, NCCL's buffers and every segment
	// the caching allocator still holds, its cache included.
	ContextBytes    int64 `json:"context_bytes"`
	NCCLBytes       int64 `json:"nccl_bytes,omitempty"`
	DeviceUsedBytes int64 `json:"device_used_bytes"`
}

// unlimited is the capacity of a meta card "of unlimited memory": 8 TiB,
// half the address window each simulated card has.
const unlimited = 8 << 40

// DefaultTokens is the batch share of each card in MeasureMemory.
const DefaultTokens = 1024

// Shape returns the layers and their width for e: hidden = √LayerSize
// rounded, layers = Params/hidden² rounded (at least one).
func (e Experiment) Shape() (layers, hidden int, err error) {
	if e.Params < 1 || math.IsNaN(e.Params) || math.IsInf(e.Params, 0) {
		return 0, 0, errorf("MeasureMemory: params %v must be at least 1", e.Params)
	}
	size := float64(e.LayerSize)
	if e.LayerSize == 0 {
		size = e.Params / 64
	}
	if size < 1 || size > e.Params {
		return 0, 0, errorf("MeasureMemory: layer size %d must be between 1 and the parameters (%.4g)", e.LayerSize, e.Params)
	}
	hidden = max(1, int(math.Round(math.Sqrt(size))))
	layers = max(1, int(math.Round(e.Params/float64(hidden*hidden))))
	return layers, hidden, nil
}

// MeasureMemory builds e's model on e.Devices meta cards, takes two
// training steps at e.Stage and measures, through each card's allocator,
// the model states it holds after the second and its peak during it,
// with that step's modelled time (the first step allocates the gradients
// and optimizer state as it goes, so its peak is not every step's). Nothing is computed from ZeRO's formula; the
// figures are what the allocator saw.
//
// The DDP stage uses gradient_as_bucket_view (the gradients are the
// bucket buffers), so that its model states are the paper's baseline;
// PyTorch's default holds the gradients twice (see Config).
func MeasureMemory(e Experiment) (Measurement, error) {
	layers, hidden, err := e.Shape()
	if err != nil {
		return Measurement{}, err
	}
	if e.Devices < 1 || e.Devices > sim.MaxMetaIndex+1 {
		return Measurement{}, errorf("MeasureMemory: devices %d must be between 1 and %d", e.Devices, sim.MaxMetaIndex+1)
	}
	if e.Stage < DDP || e.Stage > ZeRO3 {
		return Measurement{}, errorf("MeasureMemory: stage %d; use 0 (DDP), 1, 2 or 3", int(e.Stage))
	}
	if e.Tokens < 0 {
		return Measurement{}, errorf("MeasureMemory: tokens %d must be positive", e.Tokens)
	}
	if e.NCCLChannels < 0 || e.NCCLChannels > maxNCCLChannels {
		return Measurement{}, errorf("MeasureMemory: NCCL channels %d must be between 0 (none modelled) and %d", e.NCCLChannels, maxNCCLChannels)
	}
	if e.Prefetch != GatherOnDemand && e.Stage != ZeRO3 {
		return Measurement{}, errorf("MeasureMemory: prefetching gathers ZeRO-3's parameters ahead; stage %d gathers none per layer", int(e.Stage))
	}
	if e.Tokens == 0 {
		e.Tokens = DefaultTokens
	}
	node, err := e.node()
	if err != nil {
		return Measurement{}, err
	}
	card := strings.ToLower(strings.TrimSpace(e.Card))
	if card == "" {
		card = "meta"
	}
	var prof device.Profile
	limited := card != "meta"
	if limited {
		if prof, err = device.LookupProfile(card); err != nil {
			return Measurement{}, errorf("MeasureMemory: %s", strings.TrimPrefix(err.Error(), "device: "))
		}
	} else if prof, err = device.LookupProfile(device.DefaultMetaProfile); err != nil {
		return Measurement{}, err
	}
	m := Measurement{Stage: int(e.Stage), Devices: e.Devices, Params: int64(layers) * int64(hidden) * int64(hidden),
		Layers: layers, Hidden: hidden, Tokens: e.Tokens, Card: card, Nodes: 1, CardsPerNode: e.Devices, DeepSpeed: e.DeepSpeed}
	if node != nil {
		m.Nodes, m.CardsPerNode, _ = onNodes(e.Devices, node.CardsPerNode) // checked by e.node
	}
	m.ContextBytes = prof.ContextSize
	// First on a card of unlimited memory: the figures a step needs.
	big := prof.Resized(unlimited)
	big.Name = prof.Name + "-unlimited"
	if err := measure(e, node, layers, hidden, big, &m); err != nil {
		return Measurement{}, err
	}
	if !limited {
		return m, nil
	}
	// The step fits when its reserved memory stayed within what the card's
	// allocator may reserve: on the card it would run the same. Above
	// that, it runs on the card itself, whose allocator frees its cache
	// and retries before it gives up, as PyTorch's does.
	m.UsableBytes = prof.Capacity - prof.ContextSize - m.NCCLBytes
	fits := m.PeakReservedBytes <= m.UsableBytes
	if !fits {
		onCard := m
		err := measure(e, node, layers, hidden, prof, &onCard)
		var oom *alloc.OutOfMemoryError
		switch {
		case err == nil:
			fits, m = true, onCard
		case !errors.As(err, &oom):
			return Measurement{}, err
		}
	}
	m.Fits = &fits
	return m, nil
}

// node returns the node e places its cards on (nil: one node of every
// card), checked.
func (e Experiment) node() (*device.Node, error) {
	if e.CardsPerNode < 0 {
		return nil, errorf("MeasureMemory: cards per node %d must be at least 1 (0: the node's own)", e.CardsPerNode)
	}
	if strings.TrimSpace(e.Node) == "" {
		if e.CardsPerNode != 0 {
			return nil, errorf("MeasureMemory: cards per node %d needs a node (Experiment.Node)", e.CardsPerNode)
		}
		return nil, nil
	}
	n, err := device.LookupNode(e.Node)
	if err != nil {
		return nil, errorf("MeasureMemory: %s", strings.TrimPrefix(err.Error(), "device: "))
	}
	if e.CardsPerNode > 0 {
		n.CardsPerNode = e.CardsPerNode
	}
	if _, _, err := onNodes(e.Devices, n.CardsPerNode); err != nil {
		return nil, errorf("MeasureMemory: %v", err)
	}
	return &n, nil
}

func measure(e Experiment, node *device.Node, layers, hidden int, prof device.Profile, m *Measurement) error {
	devs := make([]*device.Device, e.Devices)
	for r := range devs {
		d, err := device.New(sim.NewMeta(r, prof), device.WithAllocConfig(alloc.Config{}))
		if err != nil {
			return err
		}
		devs[r] = d
	}
	var opts []GroupOption
	if node != nil {
		opts = append(opts, OnNodes(*node))
	}
	if e.NCCLChannels > 0 {
		opts = append(opts, WithNCCLBuffers(NCCLBuffers{Channels: e.NCCLChannels}))
	}
	g, err := NewGroup(devs, opts...)
	if err != nil {
		return err
	}
	defer g.Close()
	// The model is built on a meta card of its own, like FSDP's
	// device="meta" construction: it holds no values, and the trainer's
	// ranks start from zeros.
	home, err := device.New(sim.NewMeta(sim.MaxMetaIndex, prof.Resized(unlimited)), device.WithAllocConfig(alloc.Config{}))
	if err != nil {
		return err
	}
	var model *nn.Sequential
	if err := tensor.Try(func() {
		var ls []nn.Module
		for i := range layers {
			if i > 0 {
				ls = append(ls, nn.NewReLU())
			}
			ls = append(ls, nn.NewLinear(hidden, hidden, false, tensor.On(home)))
		}
		model = nn.NewSequential(ls...)
	}); err != nil {
		return fmt.Errorf("distributed: MeasureMemory: building the model: %w", err)
	}
	defer nn.Release(model)
	tr, err := NewTrainer(g, model, Config{Stage: e.Stage, Dtype: tensor.Float16, Optimizer: e.Optimizer,
		SGD: sgdForMemory, GradientAsBucketView: true, DeepSpeed: e.DeepSpeed, Prefetch: e.Prefetch})
	if err != nil {
		return err
	}
	defer tr.Release()
	// Building the model left float32 temporaries in each card's cache;
	// the step is measured from an empty cache, so that its reserved
	// peak is its own.
	for _, d := range devs {
		d.EmptyCache()
	}
	xs := make([]*tensor.Tensor, e.Devices)
	ys := make([]*tensor.Tensor, e.Devices)
	if err := tensor.Try(func() {
		for r, d := range devs {
			xs[r] = tensor.Zeros([]int{e.Tokens, hidden}, tensor.Float16, tensor.On(d))
			ys[r] = tensor.Zeros([]int{e.Tokens, hidden}, tensor.Float16, tensor.On(d))
		}
	}); err != nil {
		return fmt.Errorf("distributed: MeasureMemory: the batch: %w", err)
	}
	// Two steps: the first allocates the gradients and the optimizer
	// state as it goes (lazily, as PyTorch does), so only the second
	// shows the peak of every later step, with all model states present.
	_, err = tr.Step(xs, ys)
	if err == nil {
		_, err = tr.Step(xs, ys)
	}
	release(xs...)
	release(ys...)
	if err != nil {
		return err
	}
	*m = Measurement{Stage: m.Stage, Devices: m.Devices, Params: m.Params, Layers: m.Layers, Hidden: m.Hidden,
		Tokens: m.Tokens, Card: m.Card, Nodes: m.Nodes, CardsPerNode: m.CardsPerNode, DeepSpeed: m.DeepSpeed,
		Fits: m.Fits, UsableBytes: m.UsableBytes, ContextBytes: m.ContextBytes}
	m.Link, m.LinkBandwidth = g.Link()
	m.NCCLBytes = g.NCCLBytes()
	for r, st := range tr.Last() {
		// What the driver sees beyond the context of the profile the
		// step ran on (a card of unlimited memory has none): NCCL's
		// buffers and the allocator's segments.
		free, total := devs[r].MemInfo()
		m.DeviceUsedBytes = max(m.DeviceUsedBytes, m.ContextBytes+total-free-prof.ContextSize)
		m.Gathered = max(m.Gathered, st.Gathered)
		m.ModelStateBytes = max(m.ModelStateBytes, devs[r].MemoryAllocated())
		m.PeakBytes = max(m.PeakBytes, st.Peak)
		m.PeakReservedBytes = max(m.PeakReservedBytes, st.PeakReserved)
		m.StepSeconds = max(m.StepSeconds, st.Time.Seconds())
		m.CommSeconds = max(m.CommSeconds, st.Comm.Seconds())
		m.CommBytes = max(m.CommBytes, st.CommBytes)
	}
	return nil
}

// sgdForMemory is the SGD MeasureMemory runs: momentum 0.9, so a
// parameter costs a float32 master weight and a float32 momentum
// (K = 8).
var sgdForMemory = optim.SGDConfig{LR: 1e-3, Momentum: 0.9}

// K is the bytes of optimizer state per parameter that mixed precision
// keeps in float32, ZeRO's K: the master weight and Adam's two moments
// (12), or the master weight and SGD's momentum (8).
func (o Optimizer) K() float64 {
	if o == SGD {
		return 8
	}
	return 12
}

// FormulaBytes is the model states per card that ZeRO's paper gives
// (Section 5, Figure 1) for psi parameters on n cards with K bytes of
// optimizer state per parameter: (2+2+K)Ψ at stage 0, (2+2)Ψ + KΨ/N at
// stage 1, 2Ψ + (2+K)Ψ/N at stage 2, (2+2+K)Ψ/N at stage 3. It is the
// prediction MeasureMemory's measurement is checked against.
func FormulaBytes(psi float64, n int, stage Stage, k float64) float64 {
	N := float64(n)
	switch stage {
	case ZeRO1:
		return 4*psi + k*psi/N
	case ZeRO2:
		return 2*psi + (2+k)*psi/N
	case ZeRO3:
		return (4 + k) * psi / N
	}
	return (4 + k) * psi
}
