package snapwhatif

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc/snapshot"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/nn"
)

// The hidden tests record their own snapshots, of a GPT the public tests
// never record, and compute the answer with the grader's own replay:
// nothing is stored that a submission could read.

const mib = int64(1) << 20

// hiddenRun is a GPT of 6 blocks of width 384 trained five steps on
// sequences of changing length, recorded on an A100's meta card.
func hiddenRun(t *testing.T, batch int) Run {
	t.Helper()
	card, err := device.LookupProfile("a100-40gb")
	require.NoError(t, err)
	return Run{Model: nn.GPTConfig{Vocab: 1536, Dim: 384, Heads: 6, Layers: 6},
		Batch: batch, Seqs: []int{192, 64, 160, 112, 192}, Card: card}
}

func record(t *testing.T, r Run) *snapshot.Snapshot {
	t.Helper()
	data, err := Record(r)
	require.NoError(t, err)
	s, err := snapshot.Read(bytes.NewReader(data), snapshot.Limits)
	require.NoError(t, err)
	return s
}

// card is a made-up card of capacity bytes, context of them the CUDA
// context's.
func card(t *testing.T, capacity, context int64) device.Profile {
	t.Helper()
	p, err := device.LookupProfile("classroom")
	require.NoError(t, err)
	p.Name, p.Capacity, p.ContextSize = "made-up", capacity, context
	return p
}

// busiest is the device whose trace has the most events.
func busiest(s *snapshot.Snapshot) int {
	d := 0
	for i, tr := range s.Traces {
		if len(tr) > len(s.Traces[d]) {
			d = i
		}
	}
	return d
}

// replay is the what-if table of the options on a card of capacity
// bytes (0: unlimited) with context bytes of it taken.
func replay(t *testing.T, s *snapshot.Snapshot, capacity, context int64, options []string) []snapshot.Outcome {
	t.Helper()
	var settings []snapshot.Setting
	for _, o := range options {
		st, err := snapshot.ParseSetting(o)
		require.NoError(t, err)
		settings = append(settings, st)
	}
	out, err := s.WhatIf(snapshot.WhatIfOptions{Device: busiest(s), Capacity: capacity, Context: context}, settings)
	require.NoError(t, err)
	return out
}

// expected is the grader's answer.
func expected(t *testing.T, s *snapshot.Snapshot, p device.Profile, options []string) Choice {
	t.Helper()
	want := Choice{Best: -1}
	for i, o := range replay(t, s, p.Capacity, p.ContextSize, options) {
		want.Rows = append(want.Rows, Row{Setting: options[i], Fits: o.OOM == nil,
			PeakAllocated: o.PeakAllocated, PeakReserved: o.PeakReserved, Retries: o.Retries})
	}
	for i, r := range want.Rows {
		if !r.Fits {
			continue
		}
		if want.Best < 0 {
			want.Best = i
			continue
		}
		b := want.Rows[want.Best]
		if r.Retries < b.Retries || r.Retries == b.Retries && r.PeakReserved < b.PeakReserved {
			want.Best = i
		}
	}
	if want.Best >= 0 {
		want.Headroom = p.Capacity - p.ContextSize - want.Rows[want.Best].PeakReserved
	}
	return want
}

func describe(c Choice) string {
	var b bytes.Buffer
	for i, r := range c.Rows {
		fmt.Fprintf(&b, "  %d %-45q fits %-5v allocated %8.2f MiB reserved %8.2f MiB retries %d\n", i, r.Setting, r.Fits,
			float64(r.PeakAllocated)/float64(mib), float64(r.PeakReserved)/float64(mib), r.Retries)
	}
	fmt.Fprintf(&b, "  best %d, headroom %.2f MiB\n", c.Best, float64(c.Headroom)/float64(mib))
	return b.String()
}

func check(t *testing.T, s *snapshot.Snapshot, p device.Profile, options []string) Choice {
	t.Helper()
	want := expected(t, s, p, options)
	got, err := Choose(s, p, options)
	require.NoError(t, err)
	assert.Equal(t, want, got, "on a card of %.0f MiB (%.0f MiB of it the CUDA context); want:\n%sgot:\n%s",
		float64(p.Capacity)/float64(mib), float64(p.ContextSize)/float64(mib), describe(want), describe(got))
	return want
}

// fourOptions are the settings most tables try.
func fourOptions() []string {
	return []string{"", "max_split_size_mb:64", "roundup_power2_divisions:4", "expandable_segments:True"}
}

// peaks are the lowest peak allocated and the highest peak reserved memory
// of the options on an unlimited card.
func peaks(t *testing.T, s *snapshot.Snapshot, options []string) (lowAllocated, highReserved int64) {
	t.Helper()
	for i, o := range replay(t, s, 0, 0, options) {
		if i == 0 || o.PeakAllocated < lowAllocated {
			lowAllocated = o.PeakAllocated
		}
		highReserved = max(highReserved, o.PeakReserved)
	}
	return lowAllocated, highReserved
}

// findCard returns memory for the allocator, in steps of 4 MiB from high
// down, on which ok holds: hint first, the card the scan finds today, so
// that a grading replays the snapshot on one card where the scan replays
// it on a dozen or thirty (most of this exercise's grading time went to
// those scans); the scan runs only when the hint no longer holds (after a
// change to the allocator's replay, say). Neither depends on the
// submission: only the grader's own replay decides the card.
func findCard(high, hint int64, ok func(usable int64) bool) (int64, bool) {
	if hint <= high && ok(hint) {
		return hint, true
	}
	for usable := high &^ (4*mib - 1); usable > 0; usable -= 4 * mib {
		if ok(usable) {
			return usable, true
		}
	}
	return 0, false
}

func TestHiddenRoomyCard(t *testing.T) {
	s := record(t, hiddenRun(t, 12))
	p, err := device.LookupProfile("h100-80gb")
	require.NoError(t, err)
	options := []string{"roundup_power2_divisions:4", "", "expandable_segments:True", "max_split_size_mb:64"}
	want := check(t, s, p, options)
	for _, r := range want.Rows {
		require.True(t, r.Fits, "the test's own card must hold every setting")
	}
}

// TestHiddenTightCard: a card on which some settings run out of memory
// and one fits only because the allocator freed its cache and retried:
// on an unlimited card it reserves more than this card has.
func TestHiddenTightCard(t *testing.T) {
	s := record(t, hiddenRun(t, 12))
	options := fourOptions()
	unlimited := replay(t, s, 0, 0, options)
	_, high := peaks(t, s, options)
	const context = 128 * mib
	usable, ok := findCard(high, 664*mib, func(usable int64) bool {
		want := expected(t, s, card(t, usable+context, context), options)
		fails, retried := false, false
		for i, r := range want.Rows {
			fails = fails || !r.Fits
			retried = retried || (r.Fits && r.Retries > 0 && unlimited[i].PeakReserved > usable)
		}
		return fails && retried
	})
	require.True(t, ok, "the test found no card that is tight enough")
	check(t, s, card(t, usable+context, context), options)
}

// TestHiddenRetriesCost: a card on which the setting that reserves least
// fits only with a retry, and another fits without one. At batch 10,
// rounding to powers of two fits with 602 to 615 MiB for the allocator
// only by retrying, with as little reserved as the default, which needs
// no retry; at batch 12 no card shows it.
func TestHiddenRetriesCost(t *testing.T) {
	s := record(t, hiddenRun(t, 10))
	options := []string{"roundup_power2_divisions:4", "", "max_split_size_mb:64"}
	_, high := peaks(t, s, options)
	const context = 128 * mib
	usable, ok := findCard(high, 612*mib, func(usable int64) bool {
		want := expected(t, s, card(t, usable+context, context), options)
		least := -1
		for i, r := range want.Rows {
			if r.Fits && (least < 0 || r.PeakReserved < want.Rows[least].PeakReserved) {
				least = i
			}
		}
		return least >= 0 && want.Best >= 0 && want.Rows[least].Retries > 0 && want.Rows[want.Best].Retries == 0
	})
	require.True(t, ok, "the test found no card on which a retry decides")
	check(t, s, card(t, usable+context, context), options)
}

// TestHiddenContextCounts: a card whose CUDA context changes the choice.
func TestHiddenContextCounts(t *testing.T) {
	s := record(t, hiddenRun(t, 12))
	options := fourOptions()
	_, high := peaks(t, s, options)
	const context = 128 * mib
	usable, ok := findCard(high, 592*mib, func(usable int64) bool {
		return expected(t, s, card(t, usable+context, context), options).Best != expected(t, s, card(t, usable+context, 0), options).Best
	})
	require.True(t, ok, "the test found no card on which the context decides")
	check(t, s, card(t, usable+context, context), options)
}

// TestHiddenChoosesByReserved: the first option allocates no more than the
// second but reserves more; both fit, with as many retries.
func TestHiddenChoosesByReserved(t *testing.T) {
	s := record(t, hiddenRun(t, 12))
	p := card(t, 1024*mib, 64*mib)
	candidates := []string{"", "max_split_size_mb:20", "roundup_power2_divisions:16", "max_split_size_mb:24",
		"garbage_collection_threshold:0.7,per_process_memory_fraction:0.8", "garbage_collection_threshold:0.9,per_process_memory_fraction:0.7",
		"garbage_collection_threshold:0.5,per_process_memory_fraction:0.7", "expandable_segments:True"}
	rows := expected(t, s, p, candidates).Rows
	for i, a := range rows {
		for j, b := range rows {
			if a.Fits && b.Fits && a.Retries == b.Retries && a.PeakAllocated <= b.PeakAllocated && a.PeakReserved > b.PeakReserved {
				want := check(t, s, p, []string{candidates[i], candidates[j]})
				require.Equal(t, 1, want.Best)
				return
			}
		}
	}
	t.Fatal("the test found no setting that allocates less and reserves more than another")
}

func TestHiddenNothingFits(t *testing.T) {
	s := record(t, hiddenRun(t, 12))
	options := fourOptions()
	low, _ := peaks(t, s, options)
	want := check(t, s, card(t, 128*mib+low/2, 128*mib), options)
	require.Equal(t, -1, want.Best)
}

// TestHiddenTiesGoToTheFirst: garbage_collection_threshold acts only under
// a memory fraction, so expandable segments with and without it replay
// alike; first as the first two options, then as the second and third.
func TestHiddenTiesGoToTheFirst(t *testing.T) {
	s := record(t, hiddenRun(t, 12))
	p, err := device.LookupProfile("t4")
	require.NoError(t, err)
	alike := []string{"expandable_segments:True", "expandable_segments:True,garbage_collection_threshold:0.8"}
	for _, options := range [][]string{
		{alike[0], alike[1], "", "roundup_power2_divisions:4"},
		{"roundup_power2_divisions:4", alike[0], alike[1], ""},
	} {
		want := check(t, s, p, options)
		first := slices.Index(options, alike[0])
		require.Equal(t, want.Rows[first].PeakReserved, want.Rows[first+1].PeakReserved)
		require.Equal(t, first, want.Best)
	}
}

// TestHiddenDeviceWithMostEvents: a snapshot of a program that ran on its
// third card holds empty traces for the first two. Then one of a program
// that ran on two cards, whose history kept the last 3,000 events of each:
// as many events on both, so the first card's.
func TestHiddenDeviceWithMostEvents(t *testing.T) {
	r := hiddenRun(t, 12)
	r.Index = 2
	s := record(t, r)
	require.Len(t, s.Traces, 3)
	require.Empty(t, s.Traces[0])
	p := card(t, 2048*mib, 128*mib)
	check(t, s, p, fourOptions())

	first, second := hiddenRun(t, 8), hiddenRun(t, 12)
	first.MaxEntries, second.MaxEntries, second.Index = 3000, 3000, 1
	a, b := record(t, first), record(t, second)
	both := &snapshot.Snapshot{Segments: append(slices.Clone(a.Segments), b.Segments...),
		Traces: [][]snapshot.Event{a.Traces[0], b.Traces[1]}, Settings: a.Settings}
	require.Len(t, both.Traces[0], 3000)
	require.Len(t, both.Traces[1], 3000)
	on0 := check(t, both, p, fourOptions())
	on1 := expected(t, b, p, fourOptions())
	require.NotEqual(t, on0.Rows, on1.Rows, "the two cards' traces must replay differently")
}

// TestHiddenMemoryFraction: per_process_memory_fraction caps what the
// allocator may reserve, below what the setting reserves without it.
func TestHiddenMemoryFraction(t *testing.T) {
	s := record(t, hiddenRun(t, 12))
	p := card(t, 1024*mib, 64*mib)
	unlimited := replay(t, s, 0, 0, []string{"", "expandable_segments:True"})
	fraction := func(reserved int64) string {
		return fmt.Sprintf("%.4f", float64(reserved-24*mib)/float64(p.Capacity))
	}
	options := []string{"", "per_process_memory_fraction:" + fraction(unlimited[0].PeakReserved),
		"expandable_segments:True,per_process_memory_fraction:" + fraction(unlimited[1].PeakReserved), "expandable_segments:True"}
	want := check(t, s, p, options)
	require.True(t, want.Rows[1].PeakReserved < unlimited[0].PeakReserved && want.Rows[2].PeakReserved < unlimited[1].PeakReserved,
		"the fractions must cap the replays")
}

func TestHiddenRefusesBadOptions(t *testing.T) {
	s := record(t, hiddenRun(t, 4))
	p := card(t, 2048*mib, 128*mib)
	_, err := Choose(s, p, []string{"max_split_size_mb:64"})
	require.NoError(t, err, "a setting is no error")
	for _, options := range [][]string{nil, {}, {"", "expandable_segments:Maybe"}, {"per_process_memory_fraction:1.5"}, {"max_split_size_mb:4"}} {
		_, err := Choose(s, p, options)
		assert.Error(t, err, "options %q", options)
	}
}
