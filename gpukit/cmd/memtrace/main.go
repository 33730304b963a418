package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/viz/memviewer"
)

const usage = `memtrace replays allocator traces on gpukit's caching allocator.

Usage:

	memtrace replay --device-memory BYTES [--alloc-conf STR] [--snapshot FILE.pickle] [--html FILE.html] [--max-entries N] < trace.jsonl

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
"duplicate id", "invalid fraction" or "bad op". A malformed line is also
reported on standard error with its line number; the replay goes on.

Flags:

	--device-memory BYTES   capacity of the simulated device (required);
	                        a number of bytes, or with a KiB, MiB or GiB suffix
	--alloc-conf STR        allocator configuration, PYTORCH_CUDA_ALLOC_CONF
	                        syntax (e.g. "max_split_size_mb:64"); the
	                        GPUKIT_ALLOC_CONF variable is not read
	--snapshot FILE         record history and write the final snapshot as a
	                        pickle that PyTorch's _memory_viz.py reads
	--html FILE             record history and write the final snapshot as a
	                        self-contained HTML viewer
	--max-entries N         history ring size with --snapshot/--html
	                        (default 1000000)

Exit status: 0 after a replay (even with failed operations), 1 when an output
file cannot be written or input cannot be read, 2 for usage errors.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] != "replay" {
		fmt.Fprintf(stderr, "memtrace: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	devMem := fs.String("device-memory", "", "")
	conf := fs.String("alloc-conf", "", "")
	snapPath := fs.String("snapshot", "", "")
	htmlPath := fs.String("html", "", "")
	maxEntries := fs.Int("max-entries", 1_000_000, "")
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "memtrace: "+format+"\n\n%s", append(a, usage)...)
		return 2
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usage)
			return 0
		}
		return usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected arguments %q", fs.Args())
	}
	if *devMem == "" {
		return usageErr("--device-memory is required")
	}
	capacity, err := parseBytes(*devMem)
	if err != nil {
		return usageErr("--device-memory: %v", err)
	}
	cfg, err := alloc.ParseConfig(*conf)
	if err != nil {
		return usageErr("--alloc-conf: %v", err)
	}
	if *maxEntries <= 0 {
		return usageErr("--max-entries must be positive")
	}

	r := newReplayer(capacity, cfg)
	record := *snapPath != "" || *htmlPath != ""
	if record {
		r.a.RecordHistory(alloc.HistoryOptions{Enabled: true, MaxEntries: *maxEntries})
	}
	if err := r.replay(stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "memtrace: %v\n", err)
		return 1
	}
	if record {
		snap := r.a.Snapshot()
		if *snapPath != "" {
			if err := writeFile(*snapPath, func(w io.Writer) error { return memviewer.WritePickle(w, snap) }); err != nil {
				fmt.Fprintf(stderr, "memtrace: %v\n", err)
				return 1
			}
		}
		if *htmlPath != "" {
			title := "memtrace replay on a " + alloc.FormatSize(capacity) + " device"
			if err := writeFile(*htmlPath, func(w io.Writer) error {
				return memviewer.WriteHTML(w, snap, memviewer.WithTitle(title))
			}); err != nil {
				fmt.Fprintf(stderr, "memtrace: %v\n", err)
				return 1
			}
		}
	}
	return 0
}

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

// parseBytes reads "1073741824", "1GiB", "512 MiB", "64KiB".
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a byte count", s)
	}
	if n <= 0 {
		return 0, fmt.Errorf("capacity must be positive, got %d", n)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("capacity %d × %d bytes is too large", n, mult)
	}
	return n * mult, nil
}

// writeFile writes a file through a buffered writer and reports any error,
// including the one from closing.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	if err := write(bw); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
