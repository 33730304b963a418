// Command gensnap writes a synthetic PyTorch memory snapshot
// (gpukit/cmd/memtrace/internal/synthsnap), for measuring memtrace on large
// files:
//
//	go run ./gpukit/cmd/memtrace/internal/synthsnap/gensnap -events 1200000 -frames 150 -o /tmp/big.pickle
//	/usr/bin/time -v go run ./gpukit/cmd/memtrace whatif /tmp/big.pickle
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gpumem/course/gpukit/cmd/memtrace/internal/synthsnap"
)

func main() {
	var o synthsnap.Options
	flag.IntVar(&o.Events, "events", 100000, "trace events (rounded up to whole cycles of 48)")
	flag.IntVar(&o.Frames, "frames", 100, "mean frames an event")
	flag.IntVar(&o.UniqueFrames, "unique-frames", 2000, "distinct frames")
	flag.IntVar(&o.Stacks, "stacks", 4096, "distinct stacks")
	layout := flag.String("layout", "pytorch", "pytorch (Python's pickler, with the memo) or plain (gpukit's encoder)")
	flag.BoolVar(&o.ShareFrames, "share", false, "free events refer to their alloc's frames list (pytorch layout)")
	out := flag.String("o", "", "output file (required)")
	flag.Parse()
	switch *layout {
	case "pytorch":
		o.Layout = synthsnap.PyTorch
	case "plain":
		o.Layout = synthsnap.Plain
	default:
		fmt.Fprintf(os.Stderr, "gensnap: -layout %q: pytorch or plain\n", *layout)
		os.Exit(2)
	}
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "gensnap: -o FILE is required, and nothing else")
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gensnap:", err)
		os.Exit(1)
	}
	info, err := synthsnap.Write(f, o)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gensnap:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %s: %d events (%d allocs), %d bytes\n", *out, o, info.Events, info.Allocs, info.Bytes)
}
