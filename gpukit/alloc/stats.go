package alloc

import (
	"fmt"
	"strings"
)

// Stat is one statistic as PyTorch keeps it.
type Stat struct {
	Current   int64 // value now
	Peak      int64 // highest Current since the last ResetPeakStats
	Allocated int64 // total increase since the last ResetAccumulatedStats
	Freed     int64 // total decrease since the last ResetAccumulatedStats
}

func (s *Stat) inc(x int64) {
	s.Current += x
	s.Peak = max(s.Peak, s.Current)
	s.Allocated += x
}

func (s *Stat) dec(x int64) {
	s.Current -= x
	s.Freed += x
}

// statArray holds one statistic for all, small_pool and large_pool.
type statArray [3]Stat

const (
	statAll = iota
	statSmall
	statLarge
)

var statPoolNames = [3]string{"all", "small_pool", "large_pool"}

func (a *statArray) inc(small bool, x int64) {
	a[statAll].inc(x)
	if small {
		a[statSmall].inc(x)
	} else {
		a[statLarge].inc(x)
	}
}

func (a *statArray) dec(small bool, x int64) {
	a[statAll].dec(x)
	if small {
		a[statSmall].dec(x)
	} else {
		a[statLarge].dec(x)
	}
}

type deviceStats struct {
	allocation, segment, active, inactiveSplit                                     statArray
	allocatedBytes, reservedBytes, activeBytes, inactiveSplitBytes, requestedBytes statArray

	numAllocRetries, numOOMs, numSyncAllStreams, numDeviceAlloc, numDeviceFree int64

	oversizeAllocations, oversizeSegments Stat
}

func (d *deviceStats) arrays() []struct {
	name string
	arr  *statArray
} {
	return []struct {
		name string
		arr  *statArray
	}{
		{"allocation", &d.allocation},
		{"segment", &d.segment},
		{"active", &d.active},
		{"inactive_split", &d.inactiveSplit},
		{"allocated_bytes", &d.allocatedBytes},
		{"reserved_bytes", &d.reservedBytes},
		{"active_bytes", &d.activeBytes},
		{"inactive_split_bytes", &d.inactiveSplitBytes},
		{"requested_bytes", &d.requestedBytes},
	}
}

// Stats returns the allocator's statistics under the key names of
// torch.cuda.memory_stats(), for example "allocated_bytes.all.current" or
// "reserved_bytes.large_pool.peak". max_split_size is -1 when unlimited, as
// in PyTorch.
func (a *Allocator) Stats() map[string]int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := make(map[string]int64, 9*12+16)
	put := func(prefix string, s Stat) {
		m[prefix+".current"] = s.Current
		m[prefix+".peak"] = s.Peak
		m[prefix+".allocated"] = s.Allocated
		m[prefix+".freed"] = s.Freed
	}
	for _, e := range a.stats.arrays() {
		for i, pn := range statPoolNames {
			put(e.name+"."+pn, e.arr[i])
		}
	}
	put("oversize_allocations", a.stats.oversizeAllocations)
	put("oversize_segments", a.stats.oversizeSegments)
	m["num_alloc_retries"] = a.stats.numAllocRetries
	m["num_ooms"] = a.stats.numOOMs
	m["num_sync_all_streams"] = a.stats.numSyncAllStreams
	m["num_device_alloc"] = a.stats.numDeviceAlloc
	m["num_device_free"] = a.stats.numDeviceFree
	m["max_split_size"] = -1
	if a.cfg.MaxSplitSize > 0 {
		m["max_split_size"] = a.cfg.MaxSplitSize
	}
	return m
}

// Stat returns one statistic by its Stats key, such as
// "reserved_bytes.large_pool.peak", without building the whole map: a
// program that reads a few counters after every operation (memtrace does)
// pays nanoseconds instead of microseconds. ok is false for an unknown key.
func (a *Allocator) Stat(key string) (value int64, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch key {
	case "num_alloc_retries":
		return a.stats.numAllocRetries, true
	case "num_ooms":
		return a.stats.numOOMs, true
	case "num_sync_all_streams":
		return a.stats.numSyncAllStreams, true
	case "num_device_alloc":
		return a.stats.numDeviceAlloc, true
	case "num_device_free":
		return a.stats.numDeviceFree, true
	case "max_split_size":
		if a.cfg.MaxSplitSize > 0 {
			return a.cfg.MaxSplitSize, true
		}
		return -1, true
	}
	prefix, field, found := cutLast(key)
	if !found {
		return 0, false
	}
	var s *Stat
	switch prefix {
	case "oversize_allocations":
		s = &a.stats.oversizeAllocations
	case "oversize_segments":
		s = &a.stats.oversizeSegments
	default:
		name, pool, found := cutLast(prefix)
		if !found {
			return 0, false
		}
		arr := a.stats.array(name)
		if arr == nil {
			return 0, false
		}
		switch pool {
		case "all":
			s = &arr[statAll]
		case "small_pool":
			s = &arr[statSmall]
		case "large_pool":
			s = &arr[statLarge]
		default:
			return 0, false
		}
	}
	switch field {
	case "current":
		return s.Current, true
	case "peak":
		return s.Peak, true
	case "allocated":
		return s.Allocated, true
	case "freed":
		return s.Freed, true
	}
	return 0, false
}

// cutLast splits "a.b.c" into "a.b" and "c".
func cutLast(key string) (before, after string, found bool) {
	i := strings.LastIndexByte(key, '.')
	if i < 0 {
		return key, "", false
	}
	return key[:i], key[i+1:], true
}

// array returns the statistic named like a Stats key's first part.
// A switch, not a search of arrays: Stat, which memtrace calls for each
// statistic of each line, finds it in a few nanoseconds.
func (d *deviceStats) array(name string) *statArray {
	switch name {
	case "allocation":
		return &d.allocation
	case "segment":
		return &d.segment
	case "active":
		return &d.active
	case "inactive_split":
		return &d.inactiveSplit
	case "allocated_bytes":
		return &d.allocatedBytes
	case "reserved_bytes":
		return &d.reservedBytes
	case "active_bytes":
		return &d.activeBytes
	case "inactive_split_bytes":
		return &d.inactiveSplitBytes
	case "requested_bytes":
		return &d.requestedBytes
	}
	return nil
}

// each calls f on every Stat: those of the arrays, then the oversize ones.
func (d *deviceStats) each(f func(*Stat)) {
	for _, e := range d.arrays() {
		for i := range e.arr {
			f(&e.arr[i])
		}
	}
	f(&d.oversizeAllocations)
	f(&d.oversizeSegments)
}

// MemoryAllocated is the bytes of blocks currently allocated
// (torch.cuda.memory_allocated).
func (a *Allocator) MemoryAllocated() int64 { return a.statAll(&a.stats.allocatedBytes).Current }

// MaxMemoryAllocated is the peak of MemoryAllocated.
func (a *Allocator) MaxMemoryAllocated() int64 { return a.statAll(&a.stats.allocatedBytes).Peak }

// MemoryReserved is the bytes of segments held from the device
// (torch.cuda.memory_reserved).
func (a *Allocator) MemoryReserved() int64 { return a.statAll(&a.stats.reservedBytes).Current }

// MaxMemoryReserved is the peak of MemoryReserved.
func (a *Allocator) MaxMemoryReserved() int64 { return a.statAll(&a.stats.reservedBytes).Peak }

// statAll reads the "all" Stat of one of a.stats' arrays under the lock.
func (a *Allocator) statAll(arr *statArray) Stat {
	a.mu.Lock()
	defer a.mu.Unlock()
	return arr[statAll]
}

// ResetPeakStats sets every peak to its current value.
func (a *Allocator) ResetPeakStats() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stats.each(func(s *Stat) { s.Peak = s.Current })
}

// ResetAccumulatedStats zeroes the allocated and freed totals and the event
// counters (retries, OOMs, device mallocs and frees, synchronizations).
func (a *Allocator) ResetAccumulatedStats() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stats.each(func(s *Stat) { s.Allocated, s.Freed = 0, 0 })
	a.stats.numAllocRetries = 0
	a.stats.numOOMs = 0
	a.stats.numSyncAllStreams = 0
	a.stats.numDeviceAlloc = 0
	a.stats.numDeviceFree = 0
}

// Summary returns a table in the layout of torch.cuda.memory_summary().
func (a *Allocator) Summary() string {
	st := a.Stats()
	return formatSummary(st, a.device)
}

func formatSummary(st map[string]int64, device int) string {
	// scale divides v by base for each prefix that pref, divided as well,
	// reaches limit at (PyTorch's _format_size and _format_count).
	scale := func(v, pref, base int64, limit float64, prefixes []string) (int64, string) {
		prefix := prefixes[0]
		p := float64(pref)
		for _, np := range prefixes[1:] {
			if p < limit {
				break
			}
			prefix = np
			v = floorDiv(v, base)
			p /= float64(base)
		}
		return v, prefix
	}
	fmtSize := func(sz, pref int64) string {
		sz, prefix := scale(sz, pref, 1024, 768*1024, []string{"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"})
		return fmt.Sprintf("%6d %s", sz, prefix)
	}
	fmtCount := func(cnt, pref int64) string {
		cnt, prefix := scale(cnt, pref, 1000, 750*1000, []string{" ", "K", "M"})
		return fmt.Sprintf("%7d %s ", cnt, prefix)
	}
	rule := func(c string) string { return strings.Repeat(c, 75) }
	var lines []string
	lines = append(lines, rule("="))
	lines = append(lines, fmt.Sprintf(" %16s gpukit CUDA memory summary, device ID %-18d ", "", device))
	lines = append(lines, rule("-"))
	lines = append(lines, fmt.Sprintf("  %9s CUDA OOMs: %-12d | %6s cudaMalloc retries: %-8d  ", "", st["num_ooms"], "", st["num_alloc_retries"]))
	lines = append(lines, rule("="))
	lines = append(lines, "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ")
	type metric struct {
		key, name string
		f         func(int64, int64) string
	}
	for _, m := range []metric{
		{"allocated_bytes", "Allocated memory", fmtSize},
		{"active_bytes", "Active memory", fmtSize},
		{"requested_bytes", "Requested memory", fmtSize},
		{"reserved_bytes", "GPU reserved memory", fmtSize},
		{"inactive_split_bytes", "Non-releasable memory", fmtSize},
		{"allocation", "Allocations", fmtCount},
		{"active", "Active allocs", fmtCount},
		{"segment", "GPU reserved segments", fmtCount},
		{"inactive_split", "Non-releasable allocs", fmtCount},
	} {
		lines = append(lines, rule("-"))
		var pref [4]int64
		for i, sub := range [][2]string{{"all", m.name}, {"large_pool", "      from large pool"}, {"small_pool", "      from small pool"}} {
			prefix := m.key + "." + sub[0] + "."
			v := [4]int64{st[prefix+"current"], st[prefix+"peak"], st[prefix+"allocated"], st[prefix+"freed"]}
			if i == 0 {
				pref = v
			}
			lines = append(lines, fmt.Sprintf(" %-21s | %s | %s | %s | %s ", sub[1],
				m.f(v[0], pref[0]), m.f(v[1], pref[1]), m.f(v[2], pref[2]), m.f(v[3], pref[3])))
		}
	}
	for _, m := range []metric{
		{"oversize_allocations", "Oversize allocations", fmtCount},
		{"oversize_segments", "Oversize GPU segments", fmtCount},
	} {
		lines = append(lines, rule("-"))
		prefix := m.key + "."
		v := [4]int64{st[prefix+"current"], st[prefix+"peak"], st[prefix+"allocated"], st[prefix+"freed"]}
		lines = append(lines, fmt.Sprintf(" %-21s | %s | %s | %s | %s ", m.name,
			m.f(v[0], v[0]), m.f(v[1], v[1]), m.f(v[2], v[2]), m.f(v[3], v[3])))
	}
	lines = append(lines, rule("="))
	return "|" + strings.Join(lines, "|\n|") + "|\n"
}

// floorDiv is Python's // for the non-negative values of the summary.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
