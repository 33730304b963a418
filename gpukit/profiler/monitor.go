package profiler

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/gpumem/course/gpukit/device"
)

// Sample is one reading of a Monitor.
type Sample struct {
	Time      time.Duration // since the monitor started
	Allocated int64         // device bytes allocated
	Reserved  int64         // device bytes reserved by the caching allocator
	RSS       int64         // the process's resident host memory
}

// Monitor samples a device's allocated and reserved memory and the
// process's resident memory from a goroutine at a fixed interval, as a
// polling thread (or nvidia-smi in a loop) does. It sees memory only at
// its ticks: a peak that comes and goes between two ticks is missed,
// while the allocator's own peak counter (MaxMemoryAllocated) is not.
type Monitor struct {
	d        *device.Device
	interval time.Duration
	start    time.Time
	stop     chan struct{}
	done     chan struct{}

	mu      sync.Mutex
	samples []Sample
}

// StartMonitor starts sampling d every interval; the first sample is taken
// at once. interval must be positive.
func StartMonitor(d *device.Device, interval time.Duration) (*Monitor, error) {
	if d == nil {
		return nil, errors.New("profiler: StartMonitor needs a device")
	}
	if interval <= 0 {
		return nil, errors.New("profiler: the monitor's interval must be positive, such as time.Second or time.Millisecond")
	}
	m := &Monitor{d: d, interval: interval, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	m.sample()
	go m.run()
	return m, nil
}

func (m *Monitor) run() {
	defer close(m.done)
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.sample()
		}
	}
}

func (m *Monitor) sample() {
	rss, _ := ResidentMemory()
	s := Sample{Time: time.Since(m.start), Allocated: m.d.MemoryAllocated(), Reserved: m.d.MemoryReserved(), RSS: rss}
	m.mu.Lock()
	m.samples = append(m.samples, s)
	m.mu.Unlock()
}

// Stop ends sampling and returns the samples. Calling it again returns
// the same samples.
func (m *Monitor) Stop() []Sample {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
	return m.Samples()
}

// Samples returns a copy of the samples so far.
func (m *Monitor) Samples() []Sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Sample(nil), m.samples...)
}

// MaxSampled is the highest allocated memory among samples.
func MaxSampled(samples []Sample) int64 {
	var peak int64
	for _, s := range samples {
		peak = max(peak, s.Allocated)
	}
	return peak
}

// ResidentMemory returns the process's resident set size in bytes, read
// from /proc/self/statm (Linux; an error elsewhere).
func ResidentMemory() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, errors.New("profiler: unexpected /proc/self/statm: " + string(b))
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, err
	}
	return pages * int64(os.Getpagesize()), nil
}
