package tensor_test

import (
	"sync"
	"testing"
	"time"

	"github.com/gpumem/course/gpukit/tensor"
)

// BenchmarkStepWhileWorkersInNoGrad measures the cost of a small training
// step (forward, loss, backward over a 64×64 layer on sim) on one
// goroutine, alone and while four other goroutines sit inside NoGrad (as
// data loader workers might). Every op looks up the grad mode of its
// goroutine; the ratio of the two metrics is what the workers cost the
// training loop. Run with
//
//	go test -run '^$' -bench StepWhileWorkers -benchtime 200x ./gpukit/tensor/
func BenchmarkStepWhileWorkersInNoGrad(b *testing.B) {
	w := tensor.Randn([]int{64, 64}, tensor.RequiresGrad())
	x := tensor.Randn([]int{8, 64})
	step := func() {
		y := x.Matmul(w).Relu().Sum()
		y.Backward()
		w.Grad().Release()
		w.SetGrad(nil)
		y.Release()
	}
	inScope := func(workers int) (stop func()) {
		var entered, done sync.WaitGroup
		release := make(chan struct{})
		entered.Add(workers)
		done.Add(workers)
		for range workers {
			go func() {
				defer done.Done()
				tensor.NoGrad(func() {
					entered.Done()
					<-release
				})
			}()
		}
		entered.Wait()
		return func() { close(release); done.Wait() }
	}
	best := func(f func()) time.Duration {
		f()
		m := time.Duration(1<<63 - 1)
		for range b.N {
			t0 := time.Now()
			f()
			m = min(m, time.Since(t0))
		}
		return m
	}
	alone := best(step)
	stop := inScope(4)
	withWorkers := best(step)
	stop()
	b.ReportMetric(float64(alone.Nanoseconds()), "ns/step-alone")
	b.ReportMetric(float64(withWorkers.Nanoseconds()), "ns/step-workers-in-NoGrad")
	b.ReportMetric(float64(withWorkers)/float64(alone), "ratio")
}

// TestGradModeOfOtherGoroutines checks that a scope on one goroutine
// changes nothing for another, even while it is active.
func TestGradModeOfOtherGoroutines(t *testing.T) {
	inside := make(chan struct{})
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tensor.InferenceMode(func() {
			tensor.NoGrad(func() {
				close(inside)
				<-release
			})
		})
	}()
	<-inside
	if !tensor.IsGradEnabled() || tensor.IsInferenceModeEnabled() {
		t.Fatalf("a scope on another goroutine changed this one's mode")
	}
	tensor.NoGrad(func() {
		if tensor.IsGradEnabled() {
			t.Errorf("NoGrad on this goroutine did not disable grad")
		}
	})
	close(release)
	<-done
	if !tensor.IsGradEnabled() {
		t.Fatalf("mode not restored")
	}
}

// BenchmarkGradModeLookup measures one IsGradEnabled call on a goroutine
// that never entered a scope, alone and while four other goroutines are
// inside NoGrad.
func BenchmarkGradModeLookup(b *testing.B) {
	for _, workers := range []int{0, 4} {
		b.Run(map[int]string{0: "alone", 4: "workers-in-NoGrad"}[workers], func(b *testing.B) {
			release := make(chan struct{})
			var entered, done sync.WaitGroup
			entered.Add(workers)
			done.Add(workers)
			for range workers {
				go func() {
					defer done.Done()
					tensor.NoGrad(func() { entered.Done(); <-release })
				}()
			}
			entered.Wait()
			b.ResetTimer()
			for range b.N {
				if !tensor.IsGradEnabled() {
					b.Fatal("grad disabled on a goroutine outside any scope")
				}
			}
			b.StopTimer()
			close(release)
			done.Wait()
		})
	}
}
