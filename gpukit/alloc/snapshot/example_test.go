package snapshot_test

import (
	"fmt"
	"os"

	"github.com/gpumem/course/gpukit/alloc/snapshot"
)

// Replaying a snapshot PyTorch 2.11 recorded on an H200 (a GPT trained for
// eight steps, default settings): first under its own settings, checking
// every decision, then under expandable segments.
func Example() {
	f, err := os.Open("../../cmd/memtrace/testdata/h200/gpt-default.pickle.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	s, err := snapshot.Read(f, snapshot.Limits)
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := s.Check(snapshot.CheckOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g)

	st, err := snapshot.ParseSetting("expandable_segments:True")
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := s.WhatIf(snapshot.WhatIfOptions{}, []snapshot.Setting{st})
	if err != nil {
		fmt.Println(err)
		return
	}
	o := out[0]
	fmt.Printf("%s: peak reserved %.1f MiB (allocated %.1f MiB), %d page maps\n",
		o.Setting.Name, float64(o.PeakReserved)/(1<<20), float64(o.PeakAllocated)/(1<<20), o.DeviceAllocs)
	// Output:
	// 13,747 events: 4,557 of 4,557 allocations at PyTorch's offset, 78 of 78 segment events as PyTorch made them
	// expandable_segments:True: peak reserved 1456.0 MiB (allocated 1432.1 MiB), 84 page maps
}
