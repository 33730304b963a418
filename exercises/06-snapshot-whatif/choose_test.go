package snapwhatif

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpumem/course/gpukit/alloc/snapshot"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/nn"
)

// The public tests replay a GPT of 4 blocks of width 256 (the grader's
// hidden tests another) and the snapshot shipped with the exercise. The
// figures of each row come from gpukit's replay (table, below: the table
// that memtrace whatif prints); the choice each test expects was measured
// and is written out.

const mib = int64(1) << 20

// publicRun is 5 steps of a small GPT on sequences of changing length,
// recorded on a T4's meta card.
func publicRun(t *testing.T) Run {
	t.Helper()
	card, err := device.LookupProfile("t4")
	require.NoError(t, err)
	return Run{Model: nn.GPTConfig{Vocab: 1024, Dim: 256, Heads: 4, Layers: 4},
		Batch: 16, Seqs: []int{128, 48, 96, 128, 80}, Card: card}
}

func recordRun(t *testing.T, r Run) *snapshot.Snapshot {
	t.Helper()
	data, err := Record(r)
	require.NoError(t, err)
	s, err := snapshot.Read(bytes.NewReader(data), snapshot.Limits)
	require.NoError(t, err)
	return s
}

// madeUp is a card of usable bytes for the allocator beside a CUDA context
// of context bytes.
func madeUp(t *testing.T, usable, context int64) device.Profile {
	t.Helper()
	p, err := device.LookupProfile("classroom")
	require.NoError(t, err)
	p.Name, p.Capacity, p.ContextSize = "made-up", usable+context, context
	return p
}

// table is what the options do on the card: gpukit's replay of the
// trace of the snapshot's only (or busiest) device.
func table(t *testing.T, s *snapshot.Snapshot, p device.Profile, options []string) []Row {
	t.Helper()
	var settings []snapshot.Setting
	for _, o := range options {
		st, err := snapshot.ParseSetting(o)
		require.NoError(t, err)
		settings = append(settings, st)
	}
	gpu := 0
	for d, tr := range s.Traces {
		if len(tr) > len(s.Traces[gpu]) {
			gpu = d
		}
	}
	out, err := s.WhatIf(snapshot.WhatIfOptions{Device: gpu, Capacity: p.Capacity, Context: p.ContextSize}, settings)
	require.NoError(t, err)
	var rows []Row
	for i, o := range out {
		rows = append(rows, Row{Setting: options[i], Fits: o.OOM == nil, PeakAllocated: o.PeakAllocated,
			PeakReserved: o.PeakReserved, Retries: o.Retries})
	}
	return rows
}

// checkChoice runs Choose and compares it with the table and the measured
// choice best.
func checkChoice(t *testing.T, s *snapshot.Snapshot, p device.Profile, options []string, best int) Choice {
	t.Helper()
	want := Choice{Rows: table(t, s, p, options), Best: best}
	if best >= 0 {
		want.Headroom = p.Capacity - p.ContextSize - want.Rows[best].PeakReserved
	}
	got, err := Choose(s, p, options)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	return want
}

func fourOptions() []string {
	return []string{"", "max_split_size_mb:64", "roundup_power2_divisions:4", "expandable_segments:True"}
}

// update rewrites gpt-steps.pickle: go generate runs
// go test -run ^TestShippedSnapshotIsCurrent$ . -update
var update = flag.Bool("update", false, "write gpt-steps.pickle again")

// gpt-steps.pickle, beside this file, is what Record(Shipped()) writes
// today. The grader runs the tests in a folder of their own, without it.
func TestShippedSnapshotIsCurrent(t *testing.T) {
	data, err := Record(Shipped())
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile("gpt-steps.pickle", data, 0o644))
		t.Logf("wrote gpt-steps.pickle (%d bytes)", len(data))
	}
	shipped, err := os.ReadFile("gpt-steps.pickle")
	if errors.Is(err, fs.ErrNotExist) {
		t.Log("gpt-steps.pickle is not in this folder: nothing to compare")
		return
	}
	require.NoError(t, err)
	require.True(t, bytes.Equal(shipped, data), "gpt-steps.pickle is not what Record(Shipped()) writes: run go generate ./exercises/06-snapshot-whatif/")
}

// The shipped snapshot (the run Shipped, recorded again here) on the
// classroom card, with the settings of lesson 06's table: three run out of
// memory; rounding to powers of two fits only by retrying, and expandable
// segments fits without a retry and reserves less.
func TestShippedSnapshot(t *testing.T) {
	s := recordRun(t, Shipped())
	classroom, err := device.LookupProfile("classroom")
	require.NoError(t, err)
	options := []string{"", "expandable_segments:True", "max_split_size_mb:64", "roundup_power2_divisions:4",
		"garbage_collection_threshold:0.6,per_process_memory_fraction:0.9"}
	want := checkChoice(t, s, classroom, options, 1)
	var fits []bool
	for _, r := range want.Rows {
		fits = append(fits, r.Fits)
	}
	assert.Equal(t, []bool{false, true, false, true, false}, fits)
}

// [TestHiddenRoomyCard] On a T4 every setting fits; expandable segments
// reserves least.
func TestRoomyCard(t *testing.T) {
	s := recordRun(t, publicRun(t))
	t4, err := device.LookupProfile("t4")
	require.NoError(t, err)
	checkChoice(t, s, t4, fourOptions(), 3)
}

// [TestHiddenTightCard] With 240 MiB for the allocator, only expandable
// segments fits, and only by freeing its cache and retrying: on an
// unlimited card it reserves 248 MiB.
func TestTightCard(t *testing.T) {
	s := recordRun(t, publicRun(t))
	want := checkChoice(t, s, madeUp(t, 240*mib, 128*mib), fourOptions(), 3)
	assert.Positive(t, want.Rows[3].Retries)
}

// [TestHiddenRetriesCost] With 268 MiB, rounding to powers of two fits
// with as little reserved as the default, but only after retries.
func TestRetriesCost(t *testing.T) {
	s := recordRun(t, publicRun(t))
	want := checkChoice(t, s, madeUp(t, 268*mib, 128*mib), []string{"roundup_power2_divisions:4", "", "max_split_size_mb:64"}, 1)
	assert.Positive(t, want.Rows[0].Retries)
}

// [TestHiddenContextCounts] 352 MiB of card hold the step under expandable
// segments; 128 MiB of CUDA context out of them leave too little for any
// setting.
func TestContextCounts(t *testing.T) {
	s := recordRun(t, publicRun(t))
	checkChoice(t, s, madeUp(t, 224*mib, 128*mib), fourOptions(), -1)
	checkChoice(t, s, madeUp(t, 352*mib, 0), fourOptions(), 3)
}

// [TestHiddenChoosesByReserved] Both settings allocate the same; the card
// must hold what they reserve.
func TestChoosesByReserved(t *testing.T) {
	s := recordRun(t, publicRun(t))
	want := checkChoice(t, s, madeUp(t, 1024*mib, 64*mib), []string{"", "expandable_segments:True"}, 1)
	assert.Equal(t, want.Rows[0].PeakAllocated, want.Rows[1].PeakAllocated)
}

// [TestHiddenNothingFits]
func TestNothingFits(t *testing.T) {
	s := recordRun(t, publicRun(t))
	checkChoice(t, s, madeUp(t, 200*mib, 128*mib), fourOptions(), -1)
}

// [TestHiddenTiesGoToTheFirst] No block of this run is above 64 MiB, so
// max_split_size_mb:64 replays as the default.
func TestTiesGoToTheFirst(t *testing.T) {
	s := recordRun(t, publicRun(t))
	t4, err := device.LookupProfile("t4")
	require.NoError(t, err)
	checkChoice(t, s, t4, []string{"max_split_size_mb:64", ""}, 0)
}

// [TestHiddenDeviceWithMostEvents] A program that ran on its second card;
// then one that ran on two, with the last 2,000 events of each in the
// history (the batch of 12 on the first card, 16 on the second). On the
// first card's trace rounding to powers of two and expandable segments
// reserve as much, without retries: the earlier wins.
func TestDeviceWithMostEvents(t *testing.T) {
	r := publicRun(t)
	r.Index = 1
	s := recordRun(t, r)
	require.Len(t, s.Traces, 2)
	p := madeUp(t, 1024*mib, 64*mib)
	checkChoice(t, s, p, fourOptions(), 3)

	first, second := publicRun(t), publicRun(t)
	first.Batch, first.MaxEntries, second.MaxEntries, second.Index = 12, 2000, 2000, 1
	a, b := recordRun(t, first), recordRun(t, second)
	both := &snapshot.Snapshot{Segments: append(slices.Clone(a.Segments), b.Segments...),
		Traces: [][]snapshot.Event{a.Traces[0], b.Traces[1]}, Settings: a.Settings}
	require.Len(t, both.Traces[0], 2000)
	require.Len(t, both.Traces[1], 2000)
	want := checkChoice(t, both, p, fourOptions(), 2)
	assert.Equal(t, table(t, a, p, fourOptions()), want.Rows, "the first card's trace")
}

// [TestHiddenMemoryFraction] A quarter of a 1 GiB card is not enough for
// the default without retries.
func TestMemoryFraction(t *testing.T) {
	s := recordRun(t, publicRun(t))
	want := checkChoice(t, s, madeUp(t, 960*mib, 64*mib), []string{"per_process_memory_fraction:0.25", ""}, 1)
	assert.Positive(t, want.Rows[0].Retries)
}

// [TestHiddenRefusesBadOptions]
func TestRefusesBadOptions(t *testing.T) {
	s := recordRun(t, publicRun(t))
	p := madeUp(t, 1024*mib, 64*mib)
	_, err := Choose(s, p, []string{"expandable_segments:True"})
	require.NoError(t, err)
	for _, options := range [][]string{nil, {"", "max_split_size_mb:4"}, {"expandable_segments:yes"}, {"per_process_memory_fraction:0"}} {
		_, err := Choose(s, p, options)
		assert.Error(t, err, "options %q", options)
	}
}
