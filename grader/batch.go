package grader

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpumem/course/internal/atomicfile"
)

// BatchOptions configure Batch.
type BatchOptions struct {
	Jobs        int       // submissions graded at once
	CSV         string    // grades file: one row per student, rewritten atomically after each
	FeedbackDir string    // when set, one Gradescope results file per student
	Progress    io.Writer // progress bar or lines; nil for none
	Terminal    bool      // Progress is a terminal: redraw one bar
	Regrade     bool      // grade students already in CSV again
	// Shard and Shards split the class between graders (a Kubernetes
	// Indexed Job's pods): with Shards > 1, only the students whose
	// position in byte order is Shard modulo Shards are graded.
	Shard, Shards int
}

// BatchSummary counts what Batch did.
type BatchSummary struct {
	Graded, Skipped, Failed int
}

// Batch grades every sub-folder of dir (one per student), or opts.Shard's
// share of them, with opts.Jobs workers. Students already in opts.CSV are
// skipped unless opts.Regrade, so an interrupted batch resumes where it
// stopped. A student whose grading failed (the grader's failure, not the
// code's) gets no row and is retried next time.
func (g *Grader) Batch(ctx context.Context, ex *Exercise, dir string, opts BatchOptions) (BatchSummary, error) {
	var sum BatchSummary
	if ex.Spec == nil {
		return sum, fmt.Errorf("grader: exercise %s has no hidden tests", ex.Name)
	}
	if opts.CSV == "" {
		return sum, errors.New("grader: batch needs --out FILE.csv")
	}
	if opts.Shards > 1 && (opts.Shard < 0 || opts.Shard >= opts.Shards) {
		return sum, fmt.Errorf("grader: shard %d is out of range for %d shards (0 to %d)", opts.Shard, opts.Shards, opts.Shards-1)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return sum, fmt.Errorf("grader: %w", err)
	}
	var students []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			students = append(students, e.Name())
		}
	}
	if len(students) == 0 {
		return sum, fmt.Errorf("grader: %s holds no student folders", dir)
	}
	if opts.Shards > 1 {
		var mine []string // ReadDir sorts by name: byte order
		for i, s := range students {
			if i%opts.Shards == opts.Shard {
				mine = append(mine, s)
			}
		}
		students = mine
	}
	header := csvHeader(ex.Spec)
	rows, err := readGrades(opts.CSV, header)
	if err != nil {
		return sum, err
	}
	if err := atomicfile.CheckWritable(opts.CSV); err != nil {
		return sum, fmt.Errorf("grader: %w", err)
	}
	if opts.FeedbackDir != "" {
		if err := os.MkdirAll(opts.FeedbackDir, 0o700); err != nil {
			return sum, fmt.Errorf("grader: %w", err)
		}
	}
	var todo, skipped []string
	for _, s := range students {
		if _, done := rows[s]; done && !opts.Regrade {
			skipped = append(skipped, s)
		} else {
			todo = append(todo, s)
		}
	}
	sum.Skipped = len(skipped)
	prog := &progress{w: opts.Progress, terminal: opts.Terminal, total: len(todo), start: time.Now()}
	if len(skipped) > 0 && opts.Progress != nil {
		names := strings.Join(skipped, ", ")
		if len(skipped) > 10 {
			names = strings.Join(skipped[:10], ", ") + ", ..."
		}
		fmt.Fprintf(opts.Progress, "batch: skipped %d students already in %s (%s); --regrade grades them again\n", len(skipped), opts.CSV, names)
	}
	// Whatever the batch leaves in the grader's build cache, the cache
	// stays within MaxBuildCache.
	defer TrimBuildCache()
	var mu sync.Mutex
	var firstErr error
	work := make(chan string)
	var wg sync.WaitGroup
	for range max(1, opts.Jobs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for student := range work {
				res, err := g.Grade(ctx, ex, filepath.Join(dir, student))
				mu.Lock()
				if err != nil {
					sum.Failed++
					if firstErr == nil && ctx.Err() == nil {
						firstErr = fmt.Errorf("grader: %s: %w", student, err)
					}
					prog.step(student, "grader failed: "+err.Error())
					mu.Unlock()
					continue
				}
				rows[student] = csvRow(student, ex.Spec, res)
				werr := writeGrades(opts.CSV, header, rows)
				if werr == nil && opts.FeedbackDir != "" {
					werr = atomicfile.Write(filepath.Join(opts.FeedbackDir, student+".json"), 0o600, func(w io.Writer) error {
						return WriteJSON(w, res.Gradescope())
					})
				}
				if werr != nil && firstErr == nil {
					firstErr = werr
				}
				sum.Graded++
				prog.step(student, fmt.Sprintf("%d/%d", res.Score, res.MaxScore))
				mu.Unlock()
			}
		}()
	}
	for _, s := range todo {
		select {
		case work <- s:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	prog.finish()
	if ctx.Err() != nil {
		return sum, fmt.Errorf("grader: batch interrupted after %d students; run it again to resume: %w", sum.Graded, ctx.Err())
	}
	return sum, firstErr
}

// csvHeader names each test's column with its maximum, so a gradebook
// reads without the spec beside it.
func csvHeader(spec *Spec) []string {
	h := []string{"student", "score", "max_score", "percent"}
	for _, t := range spec.Tests {
		h = append(h, fmt.Sprintf("%s (max %d)", t.Name, t.Points))
	}
	return append(h, "status", "seconds")
}

func csvRow(student string, spec *Spec, res *Result) []string {
	percent := 0.0
	if res.MaxScore > 0 {
		percent = 100 * float64(res.Score) / float64(res.MaxScore)
	}
	row := []string{csvName(student), strconv.Itoa(res.Score), strconv.Itoa(res.MaxScore), strconv.FormatFloat(percent, 'f', 1, 64)}
	for _, t := range res.Tests {
		row = append(row, strconv.Itoa(t.Score))
	}
	return append(row, res.Status, strconv.FormatFloat(res.Seconds, 'f', 1, 64))
}

// readGrades reads an existing grades file, which must have header.
func readGrades(path string, header []string) (map[string][]string, error) {
	rows := map[string][]string{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return rows, nil
	}
	if err != nil {
		return nil, fmt.Errorf("grader: %w", err)
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("grader: %s is not a grades file: %w", path, err)
	}
	if len(records) == 0 {
		return rows, nil
	}
	if strings.Join(records[0], ",") != strings.Join(header, ",") {
		return nil, fmt.Errorf("grader: %s was written for other tests (its header is %v); choose another --out or remove it", path, records[0])
	}
	for _, r := range records[1:] {
		rows[fromCSVName(r[0])] = r
	}
	return rows, nil
}

// csvName is a student's folder name as a grades file's cell: as it is,
// unless a spreadsheet would take it for a formula (OWASP's rule: a
// leading ' makes it text) or a CSV reader would not give it back exactly
// (a carriage return, any control character: then quoted as in Go).
// fromCSVName undoes it.
func csvName(name string) string {
	if strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return "'" + strconv.Quote(name)
	}
	if name != "" && strings.ContainsRune("=+-@'", rune(name[0])) {
		return "'" + name
	}
	return name
}

func fromCSVName(cell string) string {
	rest, ok := strings.CutPrefix(cell, "'")
	if !ok {
		return cell
	}
	if strings.HasPrefix(rest, `"`) {
		if name, err := strconv.Unquote(rest); err == nil {
			return name
		}
	}
	return rest
}

func writeGrades(path string, header []string, rows map[string][]string) error {
	names := make([]string, 0, len(rows))
	for n := range rows {
		names = append(names, n)
	}
	sort.Strings(names)
	// Grades are private: only their owner reads them.
	return atomicfile.Write(path, 0o600, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		cw.Write(header)
		for _, n := range names {
			cw.Write(rows[n])
		}
		cw.Flush()
		return cw.Error()
	})
}

// progress draws a bar on a terminal, or writes one line per student.
type progress struct {
	w        io.Writer
	terminal bool
	total    int
	done     int
	start    time.Time
}

func (p *progress) step(student, what string) {
	student, what = stripControl(student), stripControl(what)
	p.done++
	if p.w == nil {
		return
	}
	elapsed := time.Since(p.start)
	eta := time.Duration(0)
	if p.done > 0 {
		eta = elapsed / time.Duration(p.done) * time.Duration(p.total-p.done)
	}
	if !p.terminal {
		fmt.Fprintf(p.w, "batch: %d/%d %s %s\n", p.done, p.total, student, what)
		return
	}
	const width = 30
	filled := width * p.done / max(1, p.total)
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d  %s left  %-30.30s", strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		p.done, p.total, eta.Round(time.Second), student+" "+what)
}

func (p *progress) finish() {
	if p.w != nil && p.terminal && p.total > 0 {
		fmt.Fprintln(p.w)
	}
}
