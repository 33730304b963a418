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
//
// Its memory is bounded by downsampling: it keeps at most MaxSamples
// samples, and when they are all used, neighbouring pairs merge into one
// sample that covers both intervals (the earlier time, the maxima of
// each reading), so a long run at a short interval keeps its whole span
// at a coarser step and every peak it saw (MaxSampled is unchanged).
type Monitor struct {
	d        *device.Device
	interval time.Duration
	start    time.Time
	stop     chan struct{}
	done     chan struct{}

	mu      sync.Mutex
	samples downsampled
}

// MaxSamples is the most samples a Monitor keeps (about 128 KiB).
const MaxSamples = 4096

// downsampled keeps at most limit samples: each stored sample covers
// stride ticks (a power of two), and the newest, still filling, is open.
type downsampled struct {
	limit  int
	stride int
	buf    []Sample
	open   int // ticks merged into the last sample of buf, if < stride
}

func (d *downsampled) add(s Sample) {
	if d.stride == 0 {
		d.stride = 1
	}
	if n := len(d.buf); n > 0 && d.open < d.stride {
		d.buf[n-1] = merge(d.buf[n-1], s)
		d.open++
		return
	}
	if len(d.buf) == d.limit {
		for i := range d.limit / 2 {
			d.buf[i] = merge(d.buf[2*i], d.buf[2*i+1])
		}
		d.buf = d.buf[:d.limit/2]
		d.stride *= 2
	}
	d.buf = append(d.buf, s)
	d.open = 1
}

// merge is one sample standing for a and the later b: a's time, the
// maxima of both.
func merge(a, b Sample) Sample {
	return Sample{Time: a.Time, Allocated: max(a.Allocated, b.Allocated), Reserved: max(a.Reserved, b.Reserved), RSS: max(a.RSS, b.RSS)}
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
	m := &Monitor{d: d, interval: interval, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{}),
		samples: downsampled{limit: MaxSamples}}
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
	m.samples.add(s)
	m.mu.Unlock()
}

// Stop ends sampling and returns the samples. Calling it again returns
// the same samples; a nil monitor has none.
func (m *Monitor) Stop() []Sample {
	if m == nil {
		return nil
	}
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
	return m.Samples()
}

// Samples returns a copy of the samples so far (at most MaxSamples; see
// Monitor).
func (m *Monitor) Samples() []Sample {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Sample(nil), m.samples.buf...)
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
