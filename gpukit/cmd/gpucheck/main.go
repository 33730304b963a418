// Command gpucheck is the Go half of scripts/gpu-check.sh, which proves the
// cuda backend on a machine with an NVIDIA GPU (issue 26). Built with
// -tags cuda by `make gpu-bundle`; its logic is tested on sim.
//
//	gpucheck traces DIR                    write the judge's allocator traces (memtrace format)
//	gpucheck context [-device D] OUT.json   memory used before the first allocation, beside the profile's context
//	gpucheck timings [-device D] [-profile P] [-repeats N] [-scale F] OUT.json
//	                                       modelled against measured kernel and copy times
//	gpucheck models -list                  the judged model steps (lessons 03 and 07), one a line
//	gpucheck models [-device D] [-profile P] [-small] STEP OUT.jsonl
//	                                       run one model step, write its memory figures (models.go)
//	gpucheck report DIR                     report.md and report.json from a gpu-check folder;
//	                                       exit status 1 when anything failed or is missing
//
// The device is cuda:0 unless -device says otherwise (sim:N works too, and
// is what the tests use).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gpumem/course/gpukit/device"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `usage:
	gpucheck traces DIR
	gpucheck context [-device cuda:0] [-profile NAME] OUT.json
	gpucheck timings [-device cuda:0] [-profile NAME] [-repeats 5] [-scale 1] OUT.json
	gpucheck models -list
	gpucheck models [-device cuda:0] [-profile NAME] [-small] STEP OUT.jsonl
	gpucheck report DIR
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	devName := fs.String("device", "cuda:0", "gpukit device to measure")
	profName := fs.String("profile", "", "built-in profile to compare with (default: the card's)")
	repeats := fs.Int("repeats", 5, "timed runs per workload (the median is kept)")
	scale := fs.Float64("scale", 1, "workload size factor (1: 256 MiB copies, 4096³ gemm)")
	list := fs.Bool("list", false, "models: list the steps")
	small := fs.Bool("small", false, "models: small shapes, for a dry run that computes on the CPU")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if args[0] == "models" {
		return runModels(fs.Args(), *list, *small, *devName, *profName, stdout, stderr)
	}
	if fs.NArg() != 1 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	out := fs.Arg(0)
	fail := func(err error) int {
		fmt.Fprintf(stderr, "gpucheck %s: %v\n", args[0], err)
		return 1
	}
	openDevice := func() (*device.Device, device.Profile, error) {
		d, err := device.Open(*devName)
		if err != nil {
			return nil, device.Profile{}, err
		}
		var p device.Profile
		if *profName != "" {
			p, err = device.LookupProfile(*profName)
		} else {
			p, err = profileFor(d)
		}
		return d, p, err
	}

	switch args[0] {
	case "traces":
		if err := os.MkdirAll(out, 0o755); err != nil {
			return fail(err)
		}
		if err := writeTraces(out, judgeTraces()); err != nil {
			return fail(err)
		}
		return 0
	case "context":
		d, p, err := openDevice()
		if err != nil {
			return fail(err)
		}
		return writeResult(out, measureContext(d, p), stderr)
	case "timings":
		if *repeats < 1 || !(*scale > 0) {
			return fail(fmt.Errorf("-repeats must be at least 1 and -scale positive"))
		}
		d, p, err := openDevice()
		if err != nil {
			return fail(err)
		}
		r := calibrate(deviceTimer{d: d, s: d.NewStream()}, p, workloads(*scale), *repeats)
		r.Device = d.Name() + " (" + d.Profile().Description + ")"
		if code := writeResult(out, r, stderr); code != 0 {
			return code
		}
		if !r.OK {
			return fail(fmt.Errorf("a workload did not run; see %s", out))
		}
		return 0
	case "report":
		r, err := buildReport(out)
		if err != nil {
			return fail(err)
		}
		if code := writeResult(filepath.Join(out, "report.json"), r, stderr); code != 0 {
			return code
		}
		md := r.markdown()
		if err := writeFileAtomic(filepath.Join(out, "report.md"), []byte(md)); err != nil {
			return fail(err)
		}
		fmt.Fprint(stdout, md)
		if !r.OK {
			fmt.Fprintf(stderr, "gpucheck report: FAIL: %d failure(s)\n", len(r.Failures))
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "gpucheck: unknown command %q\n%s", args[0], usage)
	return 2
}

// runModels is `gpucheck models`: a sim or meta device takes the profile
// named by -profile (the card's, for the comparison with cuda:0).
func runModels(args []string, list, small bool, devName, profName string, stdout, stderr io.Writer) int {
	if list {
		for _, s := range modelSteps() {
			fmt.Fprintln(stdout, s.Name)
		}
		return 0
	}
	if len(args) != 2 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "gpucheck models: %v\n", err)
		return 1
	}
	step, err := lookupModelStep(args[0])
	if err != nil {
		return fail(err)
	}
	var opts []device.Option
	if kind, _, err := device.ParseName(devName); err == nil && kind != device.CUDA && profName != "" {
		p, err := device.LookupProfile(profName)
		if err != nil {
			return fail(err)
		}
		opts = append(opts, device.WithProfile(p))
	}
	d, err := device.Open(devName, opts...)
	if err != nil {
		return fail(err)
	}
	size := fullSize
	if small {
		size = smallSize
	}
	b, err := runModelStep(d, step, size)
	if err != nil {
		return fail(err)
	}
	if err := writeFileAtomic(args[1], b); err != nil {
		return fail(err)
	}
	return 0
}

func writeResult(path string, v any, stderr io.Writer) int {
	b, err := json.MarshalIndent(v, "", " ")
	if err == nil {
		err = writeFileAtomic(path, append(b, '\n'))
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpucheck: %v\n", err)
		return 1
	}
	return 0
}
