package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/distributed"
)

const usage = `shardmem measures what data parallelism and ZeRO's stages hold per card.

Usage:

	shardmem --params 7.5e9 --devices 64 [--stage 0|1|2|3|all] [--layer-size N]
	         [--optimizer adam|sgd] [--card meta|h100|...] [--format table|json]
	         [--nodes N] [--cards-per-node M] [--node dgx-h100|pcie-node]

It builds a model of --params parameters from equal square Linear layers on
--devices meta cards (cards with accounting and clocks but no bytes), takes
two mixed-precision training steps (float16 parameters and gradients, float32
master weights and optimizer state) at each stage asked for, and prints per
card, as the caching allocator measured them over the second: the model
states after the step (parameters, gradients, optimizer state), the peak during it
(activations, gathered parameters, buckets and temporaries on top), and the
step's modelled time with the time its communication kept the card's
communication stream busy. The "paper" column is ZeRO's formula
(Rajbhandari et al., SC'20) for the model built, for comparison: the
measurement does not use it.

Flags:

	--params N        parameters of the model (e.g. 7.5e9; required)
	--devices N       cards in the data-parallel group (1..4096; required
	                  unless --nodes gives it)
	--stage S         0 (DDP), 1, 2, 3, or all (default all)
	--layer-size N    parameters per layer (default params/64); each layer
	                  is a square Linear of round(sqrt(N)) features
	--optimizer O     adam (K = 12 bytes per parameter, default) or sgd
	                  (momentum 0.9, K = 8)
	--card C          meta (default: unlimited memory, the H100's clocks), or
	                  a profile (h100-80gb, a100-40gb, t4, classroom; a
	                  unique prefix such as h100 will do): the step also runs
	                  on cards of that size and shardmem says whether it fits
	--nodes N         place the cards on N nodes (--devices is then N times
	                  --cards-per-node); without --nodes or --cards-per-node
	                  every card sits in one node, joined by its peer links
	--cards-per-node M
	                  cards on each node (default: the node's own, 8)
	--node P          the node: dgx-h100 (default: NVLink inside, eight
	                  400 Gb/s NICs) or pcie-node (PCIe inside, one 100 Gb/s
	                  NIC); a unique prefix will do
	--format F        table (default) or json: one object per line with
	                  stage, devices, params, model_state_bytes, peak_bytes,
	                  peak_reserved_bytes, step_seconds, comm_seconds,
	                  comm_bytes, nodes, cards_per_node, formula_bytes and,
	                  with a card, fits and usable_bytes

Each card's share of the batch is 1024 rows. Bytes are printed in GB of 10^9
bytes, as the paper's tables are.

Exit status: 0 on success, 2 for usage errors, 1 when a measurement fails.
`

const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// result is one line of --format json.
type result struct {
	distributed.Measurement
	Optimizer    string  `json:"optimizer"`
	FormulaBytes float64 `json:"formula_bytes"`
	node         string  // the node's name, "" without nodes
}

// run is main without the process: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardmem", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	params := fs.String("params", "", "")
	devices := fs.Int("devices", 0, "")
	stage := fs.String("stage", "all", "")
	layerSize := fs.String("layer-size", "0", "")
	opt := fs.String("optimizer", "adam", "")
	card := fs.String("card", "meta", "")
	format := fs.String("format", "table", "")
	nodes := fs.Int("nodes", 0, "")
	perNode := fs.Int("cards-per-node", 0, "")
	nodeName := fs.String("node", "dgx-h100", "")
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "shardmem: "+format+"\n\n", a...)
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		return fail("%v", err)
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	psi, err := strconv.ParseFloat(*params, 64)
	if *params == "" || err != nil || psi < 1 || psi > 1e15 {
		return fail("--params must be a number of parameters between 1 and 1e15, such as 7.5e9 (got %q)", *params)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	node, n, err := parseNodes(set, *devices, *nodes, *perNode, *nodeName)
	if err != nil {
		return fail("%v", err)
	}
	*devices = n
	if *devices < 1 || *devices > 4096 {
		return fail("--devices must be between 1 and 4096 (got %d)", *devices)
	}
	stages, err := parseStages(*stage)
	if err != nil {
		return fail("%v", err)
	}
	ls, err := strconv.ParseFloat(*layerSize, 64)
	if err != nil || ls < 0 || ls > psi {
		return fail("--layer-size must be a number of parameters between 1 and --params (got %q)", *layerSize)
	}
	var o distributed.Optimizer
	switch strings.ToLower(*opt) {
	case "adam":
		o = distributed.Adam
	case "sgd":
		o = distributed.SGD
	default:
		return fail("--optimizer must be adam or sgd (got %q)", *opt)
	}
	cardName, err := parseCard(*card)
	if err != nil {
		return fail("%v", err)
	}
	if *format != "table" && *format != "json" {
		return fail("--format must be table or json (got %q)", *format)
	}

	var rows []result
	for _, s := range stages {
		m, err := distributed.MeasureMemory(distributed.Experiment{Params: psi, Devices: *devices, Stage: s,
			LayerSize: int64(ls), Optimizer: o, Card: cardName, Node: node.Name, CardsPerNode: node.CardsPerNode})
		if err != nil {
			fmt.Fprintf(stderr, "shardmem: %v\n", err)
			return exitFail
		}
		r := result{Measurement: m, Optimizer: o.String(), node: node.Name,
			FormulaBytes: distributed.FormulaBytes(float64(m.Params), m.Devices, s, o.K())}
		if *format == "json" {
			b, _ := json.Marshal(r)
			fmt.Fprintf(stdout, "%s\n", b)
		}
		rows = append(rows, r)
	}
	if *format == "table" {
		printTable(stdout, rows)
	}
	return exitOK
}

func parseStages(s string) ([]distributed.Stage, error) {
	if strings.EqualFold(s, "all") {
		return []distributed.Stage{distributed.DDP, distributed.ZeRO1, distributed.ZeRO2, distributed.ZeRO3}, nil
	}
	var out []distributed.Stage
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n > 3 {
			return nil, fmt.Errorf("--stage must be 0, 1, 2, 3, a list such as 0,3, or all (got %q)", s)
		}
		out = append(out, distributed.Stage(n))
	}
	return out, nil
}

// parseNodes checks the node flags against --devices and returns the
// node (zero without --nodes and --cards-per-node) and the cards.
func parseNodes(set map[string]bool, devices, nodes, perNode int, name string) (device.Node, int, error) {
	if !set["nodes"] && !set["cards-per-node"] {
		if set["node"] {
			return device.Node{}, 0, fmt.Errorf("--node needs --nodes or --cards-per-node")
		}
		return device.Node{}, devices, nil
	}
	node, err := lookupNode(name)
	if err != nil {
		return device.Node{}, 0, err
	}
	if set["nodes"] && (nodes < 1 || nodes > 4096) {
		return device.Node{}, 0, fmt.Errorf("--nodes must be between 1 and 4096 (got %d)", nodes)
	}
	if set["cards-per-node"] {
		if perNode < 1 || perNode > 4096 {
			return device.Node{}, 0, fmt.Errorf("--cards-per-node must be between 1 and 4096 (got %d)", perNode)
		}
		node.CardsPerNode = perNode
	}
	c := node.CardsPerNode
	if !set["nodes"] {
		if devices > c && devices%c != 0 {
			return device.Node{}, 0, fmt.Errorf("--devices %d does not fill nodes of %d cards; use at most %d or a multiple of %d", devices, c, c, c)
		}
		return node, devices, nil
	}
	if nodes*c > 4096 {
		return device.Node{}, 0, fmt.Errorf("--nodes %d × --cards-per-node %d = %d cards; at most 4096", nodes, c, nodes*c)
	}
	if set["devices"] && devices != nodes*c {
		return device.Node{}, 0, fmt.Errorf("--devices %d is not --nodes %d × --cards-per-node %d = %d; give one or the other", devices, nodes, c, nodes*c)
	}
	return node, nodes * c, nil
}

// lookupNode accepts a node's name or a unique prefix of one.
func lookupNode(s string) (device.Node, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	var names []string
	var found []device.Node
	for _, n := range device.Nodes() {
		names = append(names, n.Name)
		if n.Name == s {
			return n, nil
		}
		if s != "" && strings.HasPrefix(n.Name, s) {
			found = append(found, n)
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	return device.Node{}, fmt.Errorf("--node %q names no node; use %s", s, strings.Join(names, " or "))
}

// parseCard accepts "meta", a profile's name or a unique prefix of one.
func parseCard(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "meta" || s == "" {
		return "meta", nil
	}
	var names, found []string
	for _, p := range device.Profiles() {
		names = append(names, p.Name)
		if p.Name == s {
			return s, nil
		}
		if strings.HasPrefix(p.Name, s) {
			found = append(found, p.Name)
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	return "", fmt.Errorf("--card %q names no single profile; use meta or one of %s", s, strings.Join(names, ", "))
}

func gb(b float64) string { return fmt.Sprintf("%.3f", b/1e9) }

func printTable(w io.Writer, rows []result) {
	if len(rows) == 0 {
		return
	}
	m := rows[0]
	where := ""
	if m.node != "" {
		where = fmt.Sprintf(" on %d %s nodes of %d", m.Nodes, m.node, m.CardsPerNode)
	}
	fmt.Fprintf(w, "%.4g parameters (%d layers of %d×%d), %d cards%s (%s), %s, %d rows per card\n",
		float64(m.Params), m.Layers, m.Hidden, m.Hidden, m.Devices, where, m.Card, m.Optimizer, m.Tokens)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "stage\tmodel states GB\tpaper GB\tpeak GB\tpeak reserved GB\tstep s\tcomm s\tcomm share\t"
	if m.Fits != nil {
		head += "fits\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		line := fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%.4f\t%.4f\t%.0f%%\t", r.Stage, gb(float64(r.ModelStateBytes)), gb(r.FormulaBytes),
			gb(float64(r.PeakBytes)), gb(float64(r.PeakReservedBytes)), r.StepSeconds, r.CommSeconds, 100*r.CommSeconds/r.StepSeconds)
		switch {
		case r.Fits == nil:
		case *r.Fits:
			line += "yes\t"
		default:
			line += "no\t"
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	if m.Fits != nil {
		fmt.Fprintf(w, "the allocator of each %s card may reserve %s GB (its capacity less the CUDA context)\n", m.Card, gb(float64(m.UsableBytes)))
	}
}
