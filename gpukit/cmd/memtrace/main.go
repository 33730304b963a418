package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/viz/memviewer"
)

const usage = `memtrace replays allocator traces on gpukit's caching allocator.

Usage:

	memtrace whatif SNAPSHOT [--alloc-conf STR]... [--device NAME | --capacity SIZE] [--format text|json]
	memtrace replay --device-memory BYTES [--alloc-conf STR] [--snapshot FILE.pickle] [--html FILE.html] [--max-entries N] [--strict] < trace.jsonl
	memtrace replay --device NAME [--alloc-conf STR] ... < trace.jsonl

replay reads one JSON operation per line from standard input:

	{"op":"alloc","id":"a","size":4000000,"stream":0}   stream is optional (0)
	{"op":"free","id":"a"}
	{"op":"empty_cache"}
	{"op":"set_fraction","fraction":0.5}
	{"op":"reset_peak"}

and writes one JSON line per input line, in order:

	{"i":0,"ok":true,"error":null,"offset":0,"stats":{"allocated_bytes.all.current":4000256,...}}

i is the 0-based line index; offset is the block's offset inside its segment
(null when there is no block); error is null, "oom", "unknown id",
"duplicate id", "invalid fraction" or "bad op". A malformed line (not a JSON
object, an unknown or repeated key, a wrong type) is also reported on
standard error with its 1-based line number; the replay goes on. A UTF-8
byte-order mark at the start of the input is ignored.

Flags:

	--device-memory BYTES   capacity of the simulated device (required);
	                        a number of bytes, or with a B, KiB, MiB or GiB
	                        suffix (binary: 1 KiB = 1024 bytes)
	--device NAME           instead of --device-memory: replay on the
	                        allocator of a gpukit device, such as "cuda:0"
	                        (a binary built with -tags cuda) or "sim:0";
	                        the same decisions, on real device memory
	--alloc-conf STR        allocator configuration, PYTORCH_CUDA_ALLOC_CONF
	                        syntax (e.g. "max_split_size_mb:64" or
	                        "expandable_segments:True"); the
	                        GPUKIT_ALLOC_CONF variable is not read
	--snapshot FILE         record history and write the final snapshot as a
	                        pickle that PyTorch's _memory_viz.py reads
	--html FILE             record history and write the final snapshot as a
	                        self-contained HTML viewer
	--max-entries N         history ring size with --snapshot/--html
	                        (default 1000000)
	--strict                also exit with status 3 when an operation was
	                        refused (oom, unknown id, duplicate id, invalid
	                        fraction), not only for malformed lines

Exit status: 0 after a replay whose lines were all well-formed (refused
operations such as an OOM are answers, not errors); 3 after a replay with
malformed lines ("bad op"), or with --strict any refused operation; 1 when an
output file cannot be written or input cannot be read; 2 for usage errors.
Output paths are checked before the replay starts.
`

// Exit statuses.
const (
	exitOK      = 0
	exitIO      = 1
	exitUsage   = 2
	exitRefused = 3
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "whatif" {
		return runWhatif(args[1:], stdout, stderr)
	}
	if args[0] != "replay" {
		fmt.Fprintf(stderr, "memtrace: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	devMem := fs.String("device-memory", "", "")
	devName := fs.String("device", "", "")
	conf := fs.String("alloc-conf", "", "")
	snapPath := fs.String("snapshot", "", "")
	htmlPath := fs.String("html", "", "")
	maxEntries := fs.Int("max-entries", 1_000_000, "")
	strict := fs.Bool("strict", false, "")
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "memtrace: "+format+"\n\n%s", append(a, usage)...)
		return exitUsage
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usage)
			return exitOK
		}
		return usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected arguments %q", fs.Args())
	}
	if (*devMem == "") == (*devName == "") {
		return usageErr("give one of --device-memory and --device")
	}
	var capacity int64
	if *devMem != "" {
		c, err := parseBytes(*devMem)
		if err != nil {
			return usageErr("--device-memory: %v", err)
		}
		capacity = c
	}
	cfg, err := alloc.ParseConfig(*conf)
	if err != nil {
		return usageErr("--alloc-conf: %v", err)
	}
	if *maxEntries <= 0 {
		return usageErr("--max-entries must be positive")
	}

	if *snapPath != "" || *htmlPath != "" {
		var paths []string
		for _, p := range []string{*snapPath, *htmlPath} {
			if p != "" {
				paths = append(paths, p)
			}
		}
		if err := memviewer.CheckOutputs(paths...); err != nil {
			if errors.Is(err, memviewer.ErrSameFile) {
				return usageErr("--snapshot and --html name the same file %q; give each its own path", *snapPath)
			}
			fmt.Fprintf(stderr, "memtrace: %v\n", err)
			return exitIO
		}
	}

	var r *replayer
	if *devName != "" {
		d, err := device.Open(*devName, device.WithAllocConfig(cfg))
		if err != nil {
			fmt.Fprintf(stderr, "memtrace: --device: %v\n", err)
			return exitUsage
		}
		r = newDeviceReplayer(d.Allocator())
		capacity = d.Backend().Capacity()
	} else {
		r = newReplayer(capacity, cfg)
	}
	record := *snapPath != "" || *htmlPath != ""
	if record {
		r.a.RecordHistory(alloc.HistoryOptions{Enabled: true, MaxEntries: *maxEntries})
	}
	if err := r.replay(stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "memtrace: %v\n", err)
		return exitIO
	}
	if record {
		snap := r.a.Snapshot()
		if *snapPath != "" {
			if err := memviewer.WritePickleFile(*snapPath, snap); err != nil {
				fmt.Fprintf(stderr, "memtrace: %v\n", err)
				return exitIO
			}
		}
		if *htmlPath != "" {
			title := "memtrace replay on a " + alloc.FormatSize(capacity) + " device"
			if err := memviewer.WriteHTMLFile(*htmlPath, snap, memviewer.WithTitle(title)); err != nil {
				fmt.Fprintf(stderr, "memtrace: %v\n", err)
				return exitIO
			}
		}
	}
	switch {
	case r.badOps > 0:
		fmt.Fprintf(stderr, "memtrace: %d malformed line(s) (bad op); exit status 3\n", r.badOps)
		return exitRefused
	case *strict && r.refused > 0:
		fmt.Fprintf(stderr, "memtrace: --strict: %d operation(s) refused; exit status 3\n", r.refused)
		return exitRefused
	}
	return exitOK
}

// utf8BOM is the byte-order mark some Windows editors put at the start of a
// UTF-8 file; the first line may carry it.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// maxLine bounds one input line; a longer line is a bad op.
const maxLine = 1 << 20

// replay reads lines from in and writes result lines to out.
func (r *replayer) replay(in io.Reader, out, errOut io.Writer) error {
	br := bufio.NewReaderSize(in, 256<<10)
	bw := bufio.NewWriterSize(out, 256<<10)
	buf := make([]byte, 0, 1024)
	for i := 0; ; i++ {
		line, tooLong, err := readLine(br)
		if err == io.EOF && line == nil {
			break
		}
		if err != nil && err != io.EOF {
			bw.Flush()
			return fmt.Errorf("reading input: %w", err)
		}
		if i == 0 {
			line = bytes.TrimPrefix(line, utf8BOM)
		}
		var res result
		if tooLong {
			res = result{err: errBadOp, detail: bad("line longer than %d bytes", maxLine)}
			buf = r.appendLine(buf[:0], i, res)
		} else {
			buf, res = r.step(buf[:0], i, line)
		}
		if res.detail != nil {
			fmt.Fprintf(errOut, "memtrace: line %d: bad op: %v\n", i+1, res.detail)
		}
		switch res.err {
		case "":
		case errBadOp:
			r.badOps++
		default:
			r.refused++
		}
		if _, werr := bw.Write(buf); werr != nil {
			return fmt.Errorf("writing output: %w", werr)
		}
		if err == io.EOF {
			break
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// readLine returns the next line without its newline. A line longer than
// maxLine is consumed and reported as tooLong. At the end of input it
// returns io.EOF, with the last line if it had no newline.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	var long []byte
	for {
		frag, e := br.ReadSlice('\n')
		if e == bufio.ErrBufferFull {
			if !tooLong {
				long = append(long, frag...)
				if len(long) > maxLine {
					tooLong, long = true, nil
				}
			}
			continue
		}
		if e != nil && e != io.EOF {
			return nil, false, e
		}
		if e == io.EOF && len(frag) == 0 && long == nil && !tooLong {
			return nil, false, io.EOF
		}
		frag = bytesTrimNewline(frag)
		if tooLong {
			return []byte{}, true, e
		}
		if long != nil {
			long = append(long, frag...)
			if len(long) > maxLine {
				return []byte{}, true, e
			}
			return long, false, e
		}
		if frag == nil {
			frag = []byte{}
		}
		return frag, false, e
	}
}

func bytesTrimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// byteUnits are the suffixes parseBytes accepts, longest first.
var byteUnits = []struct {
	suffix string
	mult   int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

const validUnits = "valid suffixes are B, KiB, MiB and GiB (binary: 1 KiB = 1024 bytes)"

// parseBytes reads "1073741824", "1GiB", "512 MiB", "64KiB".
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	orig := s
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	rest := strings.TrimLeft(s, "+-0123456789")
	if unit := strings.TrimSpace(rest); unit != "" && len(rest) < len(s) && isLetter(unit[0]) {
		hint := ""
		switch strings.TrimSuffix(strings.ToUpper(unit), "B") {
		case "K", "KI":
			hint = "; did you mean KiB?"
		case "M", "MI":
			hint = "; did you mean MiB?"
		case "G", "GI":
			hint = "; did you mean GiB?"
		}
		return 0, fmt.Errorf("%q: unknown size suffix %q; %s%s", orig, unit, validUnits, hint)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a byte count: a whole number of bytes, or one with a suffix; %s", orig, validUnits)
	}
	if n <= 0 {
		return 0, fmt.Errorf("capacity must be positive, got %d", n)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("capacity %d × %d bytes is too large", n, mult)
	}
	return n * mult, nil
}
