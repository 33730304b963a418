// Command benchtorch times the ops of scripts/bench-torch.sh in gpukit, on a
// simulated GPU (real values, computed on this CPU), one line per case:
//
//	name<TAB>median seconds
//
// Each case runs once to warm up, then -reps times; the median is printed.
// The training steps (mlp_adam_step, gpt_step) restore their parameters
// to the values they had at setup before each timed run, untimed: a step's
// cost depends on the values it trains (a model whose softmax grows
// confident computes on subnormal floats, which x86 cores handle in slow
// microcode), so every timed step starts from the same state, as in
// scripts/bench_torch.py.
// With -serve, it sets up the one case named by -only, warms it up, prints
// "ready", then runs it once per line read from standard input and prints
// that run's seconds: scripts/bench-torch.sh drives it and
// scripts/bench_torch.py (the same cases in PyTorch) that way, alternating
// the two run by run, so that a change in the machine's load touches both
// alike. The "ready" line carries the seconds of that first, warm-up call
// ("ready 0.0123"): it is the one that takes fresh device memory (sim
// segments) for its outputs, as a lesson's first cell does.
// With -stream, it measures the memory bandwidth instead, with STREAM's
// four kernels (stream.go), and prints "copy", "scale", "add" and "triad"
// lines of bytes per second.
// Run it with GOMAXPROCS set to the thread count PyTorch gets.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/nn"
	"github.com/gpumem/course/gpukit/optim"
	"github.com/gpumem/course/gpukit/tensor"
)

func main() {
	reps := flag.Int("reps", 7, "timed repetitions per case (the median is printed)")
	only := flag.String("only", "", "comma-separated case names to run (default: all)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the timed runs to this file")
	serve := flag.Bool("serve", false, "run the case named by -only once per line of standard input")
	stream := flag.Bool("stream", false, "measure the memory bandwidth (STREAM's copy, scale, add, triad) on GOMAXPROCS threads and exit")
	flag.Parse()
	if *stream {
		check(streamBandwidth(os.Stdout, streamN, *reps))
		return
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	p, err := device.LookupProfile("h100-80gb")
	check(err)
	dev, err := device.Open("sim:0", device.WithProfile(p))
	check(err)
	on := tensor.On(dev)
	gen := tensor.WithGenerator(tensor.NewGenerator(1))
	for _, c := range cases(on, gen) {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), c.name) {
			continue
		}
		run, reset, done := c.setup()
		dev.Synchronize()
		first := time.Now()
		run() // warm-up: the caching allocator holds the blocks from here on
		dev.Synchronize()
		firstSeconds := time.Since(first).Seconds()
		timed := func() float64 {
			reset()
			dev.Synchronize()
			start := time.Now()
			run()
			dev.Synchronize()
			return time.Since(start).Seconds()
		}
		if *serve {
			fmt.Printf("ready %.6g\n", firstSeconds)
			in := bufio.NewScanner(os.Stdin)
			for in.Scan() {
				fmt.Printf("%.6g\n", timed())
			}
			done()
			return
		}
		ts := make([]float64, *reps)
		for i := range ts {
			ts[i] = timed()
		}
		done()
		slices.Sort(ts)
		fmt.Printf("%s\t%.6g\n", c.name, ts[len(ts)/2])
	}
}

type benchCase struct {
	name string
	// setup returns the timed run, a reset called untimed before each
	// timed run, and what releases the case's tensors.
	setup func() (run, reset, done func())
}

// stateless is the reset of a case whose runs leave nothing behind.
func stateless() {}

// restorable snapshots params and returns the reset that copies the
// snapshot back into them, and what releases the snapshot.
func restorable(params []*tensor.Tensor) (reset, release func()) {
	saved := make([]*tensor.Tensor, len(params))
	for i, p := range params {
		saved[i] = p.Detach().Clone()
	}
	return func() {
		tensor.NoGrad(func() {
			for i, p := range params {
				p.CopyFrom(saved[i])
			}
		})
	}, releaseAll(saved...)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtorch:", err)
		os.Exit(1)
	}
}

// releaseAll releases every tensor given.
func releaseAll(ts ...*tensor.Tensor) func() {
	return func() {
		for _, t := range ts {
			t.Release()
		}
	}
}

func cases(on, gen tensor.Option) []benchCase {
	randn := func(shape ...int) *tensor.Tensor { return tensor.Randn(shape, on, gen) }
	param := func(shape ...int) *tensor.Tensor { return tensor.Randn(shape, on, gen, tensor.RequiresGrad()) }
	return []benchCase{
		{"matmul", func() (func(), func(), func()) {
			a, b := randn(1024, 1024), randn(1024, 1024)
			return func() { a.Matmul(b).Release() }, stateless, releaseAll(a, b)
		}},
		{"add", func() (func(), func(), func()) {
			a, b := randn(4096, 4096), randn(4096, 4096)
			return func() { a.Add(b).Release() }, stateless, releaseAll(a, b)
		}},
		{"adam", func() (func(), func(), func()) {
			// One Adam step on a 4096×4096 parameter whose gradient is set:
			// the optimizer's own pass over p, its gradient and two moments.
			p := param(4096, 4096)
			p.SetGrad(randn(4096, 4096))
			opt, err := optim.NewAdam([]*tensor.Tensor{p}, optim.DefaultAdam())
			check(err)
			reset, forget := restorable([]*tensor.Tensor{p})
			return opt.Step, reset, func() {
				forget()
				opt.Release()
				p.SetGrad(nil)
				p.Release()
			}
		}},
		{"gelu_fwd", func() (func(), func(), func()) {
			a := randn(4096, 4096)
			return func() { a.Gelu().Release() }, stateless, releaseAll(a)
		}},
		{"softmax", func() (func(), func(), func()) {
			a := randn(4096, 4096)
			return func() { a.Softmax(-1).Release() }, stateless, releaseAll(a)
		}},
		{"layernorm_fwd_bwd", func() (func(), func(), func()) {
			x, w, b, g := param(8192, 1024), param(1024), param(1024), randn(8192, 1024)
			return func() {
				y := tensor.LayerNorm(x, []int{1024}, w, b, 1e-5)
				y.Backward(tensor.WithGradient(g))
				y.Release()
				clearGrads(x, w, b)
			}, stateless, releaseAll(x, w, b, g)
		}},
		{"gelu_fwd_bwd", func() (func(), func(), func()) {
			x, g := param(8192, 1024), randn(8192, 1024)
			return func() {
				y := x.Gelu()
				y.Backward(tensor.WithGradient(g))
				y.Release()
				clearGrads(x)
			}, stateless, releaseAll(x, g)
		}},
		{"cross_entropy_fwd_bwd", func() (func(), func(), func()) {
			x := param(8192, 1000)
			t := tensor.Randint(0, 1000, []int{8192}, on, gen)
			return func() {
				l := tensor.CrossEntropy(x, t)
				l.Backward()
				l.Release()
				clearGrads(x)
			}, stateless, releaseAll(x, t)
		}},
		{"mlp_adam_step", func() (func(), func(), func()) {
			m := nn.NewSequential(nn.NewLinear(1024, 4096, true, on, gen), nn.NewGELU(), nn.NewLinear(4096, 1024, true, on, gen))
			opt, err := optim.NewAdam(nn.Parameters(m), optim.DefaultAdam())
			check(err)
			x, target := randn(512, 1024), randn(512, 1024)
			reset, forget := restorable(nn.Parameters(m))
			return func() {
					y := m.Forward(x)
					l := tensor.MSELoss(y, target)
					l.Backward()
					opt.Step()
					opt.ZeroGrad(true)
					l.Release()
					y.Release()
				}, reset, func() {
					forget()
					opt.Release()
					nn.Release(m)
					releaseAll(x, target)()
				}
		}},
		{"gpt_step", func() (func(), func(), func()) {
			return gptStep(on, gen)
		}},
	}
}

// clearGrads drops the accumulated gradients of the leaves (set_to_none).
func clearGrads(ts ...*tensor.Tensor) {
	for _, t := range ts {
		t.SetGrad(nil)
	}
}
