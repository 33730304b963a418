package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The layout of a gpu-check output folder, as scripts/gpu-check.sh writes
// it and `gpucheck report` reads it:
//
//	env.txt                     key=value lines: card, driver, CUDA, PyTorch
//	tests/PKG.log, tests/PKG.rc a test binary's -test.v output and exit status
//	traces/NAME.jsonl [.conf]   the judge's traces (gpucheck traces)
//	judge/NAME.SIDE.jsonl       memtrace on sim and cuda:0, PyTorch's replay
//	judge/NAME.A-vs-B.json      gpu_judge.py compare (A: sim or torch, B: cuda)
//	lessons/NN-K.SIDE.json [.out] a lesson cell's statistics and output (bin/lessons),
//	                            SIDE cuda (GPUKIT_DEVICE) or sim (the card's profile)
//	models/STEP.SIDE.jsonl [.err] a model step's memory figures (models.go): SIDE sim
//	                            (meta device, the card's profile), cuda (gpucheck models)
//	                            or torch (scripts/gpu_judge_models.py)
//	models/STEP.A-vs-B.json     gpu_judge.py compare of two of them (A: sim or torch, B: cuda)
//	context.json                gpucheck context
//	timings.json                gpucheck timings
//	report.md, report.json      what `gpucheck report` writes

// testResult is one test binary's run.
type testResult struct {
	Package string   `json:"package"`
	Exit    int      `json:"exit"`
	Passed  int      `json:"passed"`
	Skipped int      `json:"skipped"`
	Failed  []string `json:"failed"`
	// Skips lists the skip reasons of top-level tests (a cuda test that
	// skipped found no GPU: that is a failure of the check, not a pass).
	Skips []string `json:"skips,omitempty"`
}

func (t testResult) ok() bool { return t.Exit == 0 && len(t.Failed) == 0 }

// parseTestLog counts a -test.v log's results.
func parseTestLog(pkg string, log []byte, exit int) testResult {
	r := testResult{Package: pkg, Exit: exit}
	sc := bufio.NewScanner(strings.NewReader(string(log)))
	sc.Buffer(nil, 1<<20)
	lastSkip := ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "--- PASS: "):
			r.Passed++
		case strings.HasPrefix(line, "--- FAIL: "):
			r.Failed = append(r.Failed, testName(line))
		case strings.HasPrefix(line, "--- SKIP: "):
			r.Skipped++
			lastSkip = testName(line)
			if !strings.Contains(lastSkip, "/") {
				r.Skips = append(r.Skips, lastSkip)
			}
		}
	}
	return r
}

// testName is the test of a "--- FAIL: TestX/sub (0.00s)" line.
func testName(line string) string {
	f := strings.Fields(line)
	if len(f) >= 3 {
		return f[2]
	}
	return line
}

// comparison is one gpu_judge.py compare result.
type comparison struct {
	Name        string   `json:"name"` // NAME.A-vs-B
	Lines       int      `json:"lines"`
	Count       int      `json:"count"`
	Differences []string `json:"differences"`
	Unavailable []string `json:"unavailable"`
	Missing     bool     `json:"missing,omitempty"` // no result file: the replay or the comparison did not run
}

// cellStats is what `lessons -run NN:K -stats FILE` writes.
type cellStats struct {
	Cell     string           `json:"cell"`
	Device   string           `json:"device"`
	Panicked string           `json:"panicked"`
	Stats    map[string]int64 `json:"stats"`
}

// lessonCell sets one lesson cell's statistics on cuda:0 beside sim's.
type lessonCell struct {
	Cell      string   `json:"cell"`
	Allocated [2]int64 `json:"allocated"` // sim, cuda: allocated_bytes.all.current
	Reserved  [2]int64 `json:"reserved"`
	PeakAlloc [2]int64 `json:"peak_allocated"`
	PeakRes   [2]int64 `json:"peak_reserved"`
	// Differences lists every compared statistic that differs
	// (comparedStat), and a panic or a missing run on either side.
	Differences []string `json:"differences"`
}

// comparedStat reports whether a lesson cell's statistic k must be equal
// on both sides: the allocated and reserved bytes, now and at the peak
// (of all pools and of each), as issue 26 asks. The cumulative counts are
// not: lesson 06's monitor cell trains for 1.5 s of wall time, however
// many steps that is, and in a dry run on sim against sim
// (scripts/gpu-check-dry.sh, before GOGC=off) cells 03:3 and 07:1 also
// counted one more inactive split or four more split allocations in one
// of two runs.
func comparedStat(k string) bool {
	return (strings.HasPrefix(k, "allocated_bytes.") || strings.HasPrefix(k, "reserved_bytes.")) &&
		(strings.HasSuffix(k, ".current") || strings.HasSuffix(k, ".peak"))
}

// compareCell compares the two runs of a cell; a nil side did not write
// its statistics.
func compareCell(cell string, sim, cuda *cellStats) lessonCell {
	c := lessonCell{Cell: cell}
	for i, side := range []*cellStats{sim, cuda} {
		name := [2]string{"sim", "cuda"}[i]
		switch {
		case side == nil:
			c.Differences = append(c.Differences, name+": no statistics (the cell did not finish)")
			continue
		case side.Panicked != "":
			c.Differences = append(c.Differences, name+": panicked: "+side.Panicked)
		}
		c.Allocated[i] = side.Stats["allocated_bytes.all.current"]
		c.Reserved[i] = side.Stats["reserved_bytes.all.current"]
		c.PeakAlloc[i] = side.Stats["allocated_bytes.all.peak"]
		c.PeakRes[i] = side.Stats["reserved_bytes.all.peak"]
	}
	if sim == nil || cuda == nil {
		return c
	}
	keys := map[string]bool{}
	for _, stats := range []map[string]int64{sim.Stats, cuda.Stats} {
		for k := range stats {
			if comparedStat(k) {
				keys[k] = true
			}
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		a, okA := sim.Stats[k]
		b, okB := cuda.Stats[k]
		if a != b || okA != okB {
			c.Differences = append(c.Differences, fmt.Sprintf("%s: sim %d, cuda %d", k, a, b))
		}
	}
	return c
}

// readLessons compares every lesson cell that ran on either side.
func readLessons(dir string) ([]lessonCell, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	cells := map[string]bool{}
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".json")
		if cell, side, ok := strings.Cut(base, "."); ok && (side == "sim" || side == "cuda") {
			cells[cell] = true
		}
	}
	names := make([]string, 0, len(cells))
	for c := range cells {
		names = append(names, c)
	}
	sort.Strings(names)
	var out []lessonCell
	for _, name := range names {
		var sides [2]*cellStats
		for i, side := range []string{"sim", "cuda"} {
			var s cellStats
			err := readJSON(filepath.Join(dir, name+"."+side+".json"), &s)
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				return nil, fmt.Errorf("gpucheck: lesson cell %s: %w", name, err)
			default:
				sides[i] = &s
			}
		}
		out = append(out, compareCell(name, sides[0], sides[1]))
	}
	return out, nil
}

// report is report.json.
type report struct {
	OK          bool              `json:"ok"`
	Failures    []string          `json:"failures"`
	Env         map[string]string `json:"env"`
	Tests       []testResult      `json:"tests"`
	Lessons     []lessonCell      `json:"lessons"`
	Comparisons []comparison      `json:"comparisons"`
	// Models are the model steps' comparisons (models.go), judged as
	// the traces are: gpukit on sim and PyTorch, each against gpukit on
	// the device.
	Models []comparison `json:"models"`
	// Steps are the model steps' points, side by side.
	Steps   []modelTable   `json:"steps"`
	Context *contextReport `json:"context"`
	Timings *timingReport  `json:"timings"`
}

// judgeSides are the comparisons each trace must have passed.
var judgeSides = []string{"sim-vs-cuda", "torch-vs-cuda"}

// buildReport reads an output folder. Every expected piece that is
// missing is a failure: a check that did not run has not passed.
func buildReport(dir string) (*report, error) {
	r := &report{Env: map[string]string{}}
	fail := func(format string, a ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, a...)) }

	if b, err := os.ReadFile(filepath.Join(dir, "env.txt")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				r.Env[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}

	logs, _ := filepath.Glob(filepath.Join(dir, "tests", "*.log"))
	if len(logs) == 0 {
		fail("no test results in %s", filepath.Join(dir, "tests"))
	}
	for _, l := range logs {
		pkg := strings.TrimSuffix(filepath.Base(l), ".log")
		b, err := os.ReadFile(l)
		if err != nil {
			return nil, err
		}
		exit := -1 // no .rc: the binary did not finish
		if rc, err := os.ReadFile(strings.TrimSuffix(l, ".log") + ".rc"); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(rc))); err == nil {
				exit = n
			}
		}
		t := parseTestLog(pkg, b, exit)
		r.Tests = append(r.Tests, t)
		if !t.ok() {
			fail("tests of %s: exit %d, failed %s", pkg, t.Exit, strings.Join(t.Failed, ", "))
		}
		if pkg == "cuda" && len(t.Skips) > 0 {
			// The cuda package's tests skip only when they find no GPU.
			fail("tests of cuda: %s skipped (no GPU?)", strings.Join(t.Skips, ", "))
		}
	}

	if _, err := os.Stat(filepath.Join(dir, "lessons")); err == nil {
		ls, err := readLessons(filepath.Join(dir, "lessons"))
		if err != nil {
			return nil, err
		}
		if len(ls) == 0 {
			fail("lessons: no cell ran")
		}
		for _, c := range ls {
			if len(c.Differences) > 0 {
				fail("lesson cell %s: %s", c.Cell, strings.Join(c.Differences, "; "))
			}
		}
		r.Lessons = ls
	}

	traces, _ := filepath.Glob(filepath.Join(dir, "traces", "*.jsonl"))
	if len(traces) == 0 {
		fail("no traces in %s", filepath.Join(dir, "traces"))
	}
	for _, tr := range traces {
		cs, err := readComparisons(filepath.Join(dir, "judge"), strings.TrimSuffix(filepath.Base(tr), ".jsonl"), fail)
		if err != nil {
			return nil, err
		}
		r.Comparisons = append(r.Comparisons, cs...)
	}
	for _, step := range modelSteps() {
		cs, err := readComparisons(filepath.Join(dir, "models"), step.Name, fail)
		if err != nil {
			return nil, err
		}
		r.Models = append(r.Models, cs...)
		r.Steps = append(r.Steps, readModelTable(filepath.Join(dir, "models"), step.Name))
	}

	if err := readJSON(filepath.Join(dir, "context.json"), &r.Context); err != nil {
		fail("context: %v", err)
	}
	if err := readJSON(filepath.Join(dir, "timings.json"), &r.Timings); err != nil {
		fail("timings: %v", err)
	} else if !r.Timings.OK {
		fail("timings: a workload did not run")
	}
	sort.Slice(r.Tests, func(i, j int) bool { return r.Tests[i].Package < r.Tests[j].Package })
	r.OK = len(r.Failures) == 0
	return r, nil
}

// readComparisons reads the comparisons judgeSides of name in dir; a
// missing one and one that found differences are failures.
func readComparisons(dir, name string, fail func(string, ...any)) ([]comparison, error) {
	var out []comparison
	for _, side := range judgeSides {
		c := comparison{Name: name + "." + side}
		b, err := os.ReadFile(filepath.Join(dir, c.Name+".json"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			c.Missing = true
			fail("%s: no comparison (the replay or the judge did not run)", c.Name)
		case err != nil:
			return nil, err
		default:
			if err := json.Unmarshal(b, &c); err != nil {
				return nil, fmt.Errorf("gpucheck: %s: %w", c.Name, err)
			}
			if c.Count > 0 {
				fail("%s: %d difference(s), first: %s", c.Name, c.Count, first(c.Differences))
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func first(s []string) string {
	if len(s) == 0 {
		return "(none listed)"
	}
	return s[0]
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// markdown renders the report for people.
func (r *report) markdown() string {
	var b strings.Builder
	verdict := "PASS"
	if !r.OK {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "# gpu-check: %s\n\n", verdict)
	keys := make([]string, 0, len(r.Env))
	for k := range r.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "- %s: %s\n", k, r.Env[k])
	}
	if len(r.Failures) > 0 {
		b.WriteString("\n## Failures\n\n")
		for _, f := range r.Failures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	b.WriteString("\n## Package tests (the bundle's test binaries; NAME@default-device: run with GPUKIT_DEVICE set to the device)\n\n| package | exit | passed | skipped | failed |\n|---|---:|---:|---:|---|\n")
	for _, t := range r.Tests {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s |\n", t.Package, t.Exit, t.Passed, t.Skipped, strings.Join(t.Failed, " "))
	}
	if len(r.Lessons) > 0 {
		b.WriteString("\n## Lessons: memory after each cell, sim (card's profile) | cuda:0\n\n| cell | allocated | reserved | peak allocated | peak reserved | differences |\n|---|---|---|---|---|---:|\n")
		pair := func(v [2]int64) string { return fmt.Sprintf("%d \\| %d", v[0], v[1]) }
		for _, c := range r.Lessons {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d |\n", c.Cell, pair(c.Allocated), pair(c.Reserved), pair(c.PeakAlloc), pair(c.PeakRes), len(c.Differences))
		}
	}
	b.WriteString("\n## Allocator traces: gpukit on sim and cuda:0, PyTorch on cuda:0\n\n")
	comparisonTable(&b, r.Comparisons)
	b.WriteString("\n## Model steps: lesson 03's saved tensors and lesson 07's GPT step, gpukit on sim (meta, the card's profile) and PyTorch, each against gpukit on cuda:0\n\n")
	b.WriteString("Every point's allocated and reserved bytes, now and at the peak, above the base taken after a warm-up; docs/gpu/README.md lists the differences to expect.\n\n")
	comparisonTable(&b, r.Models)
	b.WriteString("\nEach step's points in bytes; where the sides differ, a cell reads **sim | cuda | torch**.\n")
	for _, t := range r.Steps {
		t.markdown(&b)
	}
	if c := r.Context; c != nil {
		b.WriteString("\n## CUDA context (the expected difference between cuda:0 and sim)\n\n")
		fmt.Fprintf(&b, "Before the first allocation, %s has %s of %s free: %s used outside the allocator; the %s profile models %s (ratio %.2f%s).\n",
			c.Device, fmtBytes(c.Free), fmtBytes(c.Total), fmtBytes(c.Used), c.ProfileName, fmtBytes(c.ProfileContext), c.Ratio, offNote(c.Off))
	}
	if t := r.Timings; t != nil {
		fmt.Fprintf(&b, "\n## Modelled against measured kernel times (%s, profile %s, median of %d)\n\n", t.Device, t.Profile, t.Repeats)
		b.WriteString("| kernel | size | modelled µs | measured µs | measured/modelled |\n|---|---|---:|---:|---:|\n")
		for _, row := range t.Rows {
			if row.Error != "" {
				fmt.Fprintf(&b, "| %s | %s | %.1f | error: %s | |\n", row.Kernel, row.Size, row.ModelledUS, row.Error)
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f | %.2f%s |\n", row.Kernel, row.Size, row.ModelledUS, row.MeasuredUS, row.Ratio, offNote(row.Off))
		}
		fmt.Fprintf(&b, "\nA ratio off by more than %.0f %% (marked) means the profile's figure should be updated from this measurement.\n", 100*t.Tolerance)
	}
	return b.String()
}

// modelSides are the three runs of a model step, in the report's order.
var modelSides = [3]string{"sim", "cuda", "torch"}

// modelTable is one model step's points on the three sides.
type modelTable struct {
	Step   string         `json:"step"`
	Points []string       `json:"points"`           // the names, from the first side that ran
	Values [3][]modelLine `json:"values,omitempty"` // per side; nil: that side did not run
}

// readModelTable reads a model step's three output files, as far as they
// can be read (a missing or broken one is already a failed comparison).
func readModelTable(dir, step string) modelTable {
	t := modelTable{Step: step}
	for i, side := range modelSides {
		b, err := os.ReadFile(filepath.Join(dir, step+"."+side+".jsonl"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			var l modelLine
			if strings.TrimSpace(line) == "" || json.Unmarshal([]byte(line), &l) != nil {
				continue
			}
			t.Values[i] = append(t.Values[i], l)
		}
		if t.Points == nil {
			for _, l := range t.Values[i] {
				t.Points = append(t.Points, l.Name)
			}
		}
	}
	return t
}

// markdown writes the step's points: each statistic as sim | cuda | torch.
func (t modelTable) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "\n### %s\n\n", t.Step)
	if t.Points == nil {
		b.WriteString("No side ran.\n")
		return
	}
	b.WriteString("| point | allocated | peak allocated | reserved | peak reserved | other |\n|---|---|---|---|---|---|\n")
	cell := func(i int, k string) string {
		var vs []string
		for s := range modelSides {
			v := "–"
			if i < len(t.Values[s]) {
				if n, ok := t.Values[s][i].Stats[k]; ok {
					v = strconv.FormatInt(n, 10)
				}
			}
			vs = append(vs, v)
		}
		switch {
		case vs[0] == "–" && vs[1] == "–" && vs[2] == "–":
			return "" // not a statistic of this point
		case vs[0] == vs[1] && vs[1] == vs[2]:
			return vs[0]
		}
		return "**" + strings.Join(vs, " \\| ") + "**"
	}
	for i, name := range t.Points {
		var other []string
		for s := range modelSides {
			if i < len(t.Values[s]) {
				for _, k := range sortedKeys(t.Values[s][i].Stats) {
					if k != statAllocated && k != statPeakAlloc && k != statReserved && k != statPeakReserved {
						other = append(other, k+" "+cell(i, k))
					}
				}
				break
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", name, cell(i, statAllocated), cell(i, statPeakAlloc),
			cell(i, statReserved), cell(i, statPeakReserved), strings.Join(other, ", "))
	}
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func comparisonTable(b *strings.Builder, cs []comparison) {
	b.WriteString("| comparison | lines | differences | not compared |\n|---|---:|---:|---|\n")
	for _, c := range cs {
		diff := strconv.Itoa(c.Count)
		if c.Missing {
			diff = "missing"
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s |\n", c.Name, c.Lines, diff, strings.Join(c.Unavailable, " "))
	}
}

func offNote(off bool) string {
	if off {
		return " **off**"
	}
	return ""
}

func fmtBytes(n int64) string {
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}
