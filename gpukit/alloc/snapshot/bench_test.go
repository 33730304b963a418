package snapshot

import (
	"math/rand/v2"
	"testing"

	"github.com/gpumem/course/gpukit/alloc"
)

// fromAlloc converts a snapshot gpukit took into the model Read builds,
// without the pickle in between.
func fromAlloc(a alloc.Snapshot) *Snapshot {
	s := &Snapshot{Settings: Settings{Recorded: true, Config: alloc.Config{}}}
	for _, seg := range a.Segments {
		m := Segment{Device: seg.Device, Address: seg.Address, TotalSize: seg.TotalSize, Stream: int64(seg.Stream),
			Small: seg.SegmentType == "small", Expandable: seg.IsExpandable}
		for _, b := range seg.Blocks {
			m.Blocks = append(m.Blocks, Block{Address: b.Address, Size: b.Size, Requested: b.RequestedSize, State: b.State})
		}
		s.Segments = append(s.Segments, m)
	}
	for _, tr := range a.DeviceTraces {
		evs := make([]Event, 0, len(tr))
		for _, e := range tr {
			evs = append(evs, Event{Action: e.Action, Addr: e.Addr, Size: e.Size, Stream: int64(e.Stream)})
		}
		s.Traces = append(s.Traces, evs)
	}
	return s
}

// millionEvents records about a million events of gpukit's allocator:
// requests of every pool on three streams, about 2,000 blocks in use, freed
// in random order, recorded from the start.
func millionEvents(b *testing.B) *Snapshot {
	mem := newMemory(1 << 40)
	a := alloc.New(mem, alloc.Config{}, 0)
	a.RecordHistory(alloc.HistoryOptions{Enabled: true, MaxEntries: 2_000_000})
	rng := rand.New(rand.NewPCG(7, 1))
	streams := []alloc.Stream{0, 7, 12}
	var live []*alloc.Block
	for n := 0; n < 666_000; n++ {
		if len(live) < 2000 || rng.IntN(2) == 0 {
			size := []int64{1 + rng.Int64N(1<<20), 1<<20 + rng.Int64N(9<<20), 10<<20 + rng.Int64N(70<<20), 4 << 20}[rng.IntN(4)]
			blk, err := a.Malloc(size, streams[rng.IntN(3)])
			if err != nil {
				b.Fatal(err)
			}
			live = append(live, blk)
			continue
		}
		i := rng.IntN(len(live))
		a.Free(live[i])
		live[i] = live[len(live)-1]
		live = live[:len(live)-1]
	}
	s := fromAlloc(a.Snapshot())
	if n := len(s.Traces[0]); n < 990_000 || n > 1_100_000 {
		b.Fatalf("recorded %d events, want about a million", n)
	}
	return s
}

// BenchmarkCheck replays a million events and compares every decision
// (target: under 2 s on one core).
func BenchmarkCheck(b *testing.B) {
	s := millionEvents(b)
	b.ResetTimer()
	for range b.N {
		g, err := s.Check(CheckOptions{Capacity: 1 << 40})
		if err != nil || !g.Full() {
			b.Fatalf("%v %v", g, err)
		}
	}
	b.ReportMetric(float64(len(s.Traces[0]))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkWhatIf replays a million events' requests under one setting:
// the classifying replay, the replay, and the replay to the peak.
func BenchmarkWhatIf(b *testing.B) {
	s := millionEvents(b)
	st, err := ParseSetting("expandable_segments:True")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := s.WhatIf(WhatIfOptions{Capacity: 1 << 40}, []Setting{st}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(s.Traces[0]))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
