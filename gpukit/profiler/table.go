package profiler

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Averages is one row of the key-averages table: the events of one name
// (and input shapes, when grouped by them) added up, as PyTorch's
// FunctionEventAvg.
type Averages struct {
	Key         string
	InputShapes string // with GroupByShape: "[[64, 32], [32, 16]]"
	Count       int

	SelfCPUTime, CPUTimeTotal       time.Duration
	SelfDeviceTime, DeviceTimeTotal time.Duration

	CPUMemory, SelfCPUMemory       int64
	DeviceMemory, SelfDeviceMemory int64
}

// CPUTimeAvg is the average CPU total per call.
func (a Averages) CPUTimeAvg() time.Duration { return a.CPUTimeTotal / time.Duration(max(a.Count, 1)) }

// DeviceTimeAvg is the average device total per call.
func (a Averages) DeviceTimeAvg() time.Duration {
	return a.DeviceTimeTotal / time.Duration(max(a.Count, 1))
}

// GroupByShape makes KeyAverages keep events of different input shapes
// apart (group_by_input_shape); it needs Options.RecordShapes.
const GroupByShape = true

// KeyAverages groups the events by name (and by input shapes when
// byShape), in the order each key first appears, like
// prof.key_averages(group_by_input_shape=byShape).
func (p *Profile) KeyAverages(byShape bool) ([]Averages, error) {
	if err := p.ready(); err != nil {
		return nil, err
	}
	if byShape && !p.opts.RecordShapes {
		return nil, fmt.Errorf("profiler: grouping by input shape needs a profile started with Options{RecordShapes: true}")
	}
	var rows []Averages
	index := map[[2]string]int{}
	add := func(e *Event) {
		shapes := ""
		if byShape {
			shapes = formatShapes(e.InputShapes)
		}
		k := [2]string{e.Name, shapes}
		i, ok := index[k]
		if !ok {
			i = len(rows)
			index[k] = i
			rows = append(rows, Averages{Key: e.Name, InputShapes: shapes})
		}
		r := &rows[i]
		r.Count++
		total, self := e.End-e.Start, e.End-e.Start
		devTotal := e.DeviceTime()
		for _, c := range e.children {
			self -= c.End - c.Start
		}
		if e.Kind == Range {
			devTotal = subtreeDeviceTime(e)
		}
		r.CPUTimeTotal += total
		r.SelfCPUTime += self
		r.SelfDeviceTime += e.DeviceTime()
		r.DeviceTimeTotal += devTotal
		r.CPUMemory += e.CPUMemory
		r.SelfCPUMemory += e.SelfCPUMemory
		r.DeviceMemory += e.DeviceMemory
		r.SelfDeviceMemory += e.SelfDeviceMemory
	}
	for _, e := range p.events {
		add(e)
	}
	if p.memRow != nil {
		add(p.memRow)
	}
	return rows, nil
}

func subtreeDeviceTime(e *Event) time.Duration {
	t := e.DeviceTime()
	for _, c := range e.children {
		t += subtreeDeviceTime(c)
	}
	return t
}

// formatShapes writes shapes as Python prints a list of lists:
// [[2, 3], []].
func formatShapes(shapes [][]int) string {
	parts := make([]string, len(shapes))
	for i, s := range shapes {
		parts[i] = strings.ReplaceAll(fmt.Sprint(s), " ", ", ") // [2 3] → [2, 3]
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// column is one sortable column of the table.
type column struct {
	header, attr string
	key          func(Averages) float64
}

var columns = []column{
	{"Name", "key", nil},
	{"Self CPU %", "self_cpu_time_total", func(a Averages) float64 { return float64(a.SelfCPUTime) }},
	{"Self CPU", "self_cpu_time_total", func(a Averages) float64 { return float64(a.SelfCPUTime) }},
	{"CPU total %", "cpu_time_total", func(a Averages) float64 { return float64(a.CPUTimeTotal) }},
	{"CPU total", "cpu_time_total", func(a Averages) float64 { return float64(a.CPUTimeTotal) }},
	{"CPU time avg", "cpu_time", func(a Averages) float64 { return float64(a.CPUTimeAvg()) }},
	{"Self CUDA", "self_cuda_time_total", func(a Averages) float64 { return float64(a.SelfDeviceTime) }},
	{"Self CUDA %", "self_cuda_time_total", func(a Averages) float64 { return float64(a.SelfDeviceTime) }},
	{"CUDA total", "cuda_time_total", func(a Averages) float64 { return float64(a.DeviceTimeTotal) }},
	{"CUDA time avg", "cuda_time", func(a Averages) float64 { return float64(a.DeviceTimeAvg()) }},
	{"CPU Mem", "cpu_memory_usage", func(a Averages) float64 { return float64(a.CPUMemory) }},
	{"Self CPU Mem", "self_cpu_memory_usage", func(a Averages) float64 { return float64(a.SelfCPUMemory) }},
	{"CUDA Mem", "cuda_memory_usage", func(a Averages) float64 { return float64(a.DeviceMemory) }},
	{"Self CUDA Mem", "self_cuda_memory_usage", func(a Averages) float64 { return float64(a.SelfDeviceMemory) }},
	{"# of Calls", "count", func(a Averages) float64 { return float64(a.Count) }},
	{"Input Shapes", "input_shapes", nil},
}

// SortKeys lists what Table accepts as sortBy: PyTorch's sort_by names
// (self_cuda_memory_usage, ...) and the column headers (Self CUDA Mem, ...).
func SortKeys() []string {
	var keys []string
	for _, c := range columns {
		keys = append(keys, c.attr)
		keys = append(keys, c.header)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

func lookupColumn(name string) (column, bool) {
	for _, c := range columns {
		if strings.EqualFold(name, c.attr) || strings.EqualFold(name, c.header) {
			return c, true
		}
	}
	return column{}, false
}

// TableOptions shape Table, like the arguments of key_averages().table().
type TableOptions struct {
	SortBy       string // a column or sort_by name; "" keeps first-seen order
	RowLimit     int    // at most this many rows; 0 means 100 (PyTorch's default), -1 all
	GroupByShape bool   // one row per name and input shapes, with an Input Shapes column
	Header       string // a line printed above the table, if set
}

// Table returns the key-averages table in the layout of PyTorch's
// prof.key_averages().table(sort_by=..., row_limit=...): right-aligned
// columns of 12 characters, the name column as wide as the longest name
// plus 4 (at most 55), CUDA columns when any op ran on a device, memory
// columns, and the "Self CPU time total" and "Self CUDA time total"
// footers. Names and string columns sort ascending, numbers descending.
func (p *Profile) Table(o TableOptions) (string, error) {
	var sortCol column
	if o.SortBy != "" {
		var ok bool
		if sortCol, ok = lookupColumn(o.SortBy); !ok {
			return "", fmt.Errorf("profiler: unknown sort column %q; valid ones are: %s", o.SortBy, strings.Join(SortKeys(), ", "))
		}
	}
	rows, err := p.KeyAverages(o.GroupByShape)
	if err != nil {
		return "", err
	}
	switch {
	case sortCol.key != nil:
		slices.SortStableFunc(rows, func(a, b Averages) int { return cmp.Compare(sortCol.key(b), sortCol.key(a)) })
	case sortCol.attr == "key":
		slices.SortStableFunc(rows, func(a, b Averages) int { return cmp.Compare(a.Key, b.Key) })
	case sortCol.attr == "input_shapes":
		slices.SortStableFunc(rows, func(a, b Averages) int { return cmp.Compare(a.InputShapes, b.InputShapes) })
	}
	limit := o.RowLimit
	if limit == 0 {
		limit = 100
	}
	return p.format(rows, limit, o), nil
}

func (p *Profile) format(rows []Averages, limit int, o TableOptions) string {
	const width, spacing, maxName, maxShapes = 12, 2, 55, 80
	all, _ := p.KeyAverages(false)
	var selfCPU, selfDev time.Duration
	hasDevTime, hasDevMem, hasCPUMem := false, false, false
	for _, r := range all {
		selfCPU += r.SelfCPUTime
		selfDev += r.SelfDeviceTime
		hasDevTime = hasDevTime || r.SelfDeviceTime > 0
		hasDevMem = hasDevMem || r.SelfDeviceMemory != 0
		hasCPUMem = hasCPUMem || r.SelfCPUMemory != 0
	}
	widthRows := all
	if o.GroupByShape {
		widthRows = rows
	}
	nameWidth, shapesWidth := 0, 0
	for _, r := range widthRows {
		nameWidth = max(nameWidth, len(r.Key)+4)
		shapesWidth = max(shapesWidth, len(r.InputShapes)+4)
	}
	nameWidth = min(nameWidth, maxName)
	shapesWidth = min(shapesWidth, maxShapes)

	headers := []string{"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"}
	if hasDevTime {
		headers = append(headers, "Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg")
	}
	headers = append(headers, "CPU Mem", "Self CPU Mem")
	if hasDevMem {
		headers = append(headers, "CUDA Mem", "Self CUDA Mem")
	}
	headers = append(headers, "# of Calls")
	widths := []int{nameWidth}
	for range headers[1:] {
		widths = append(widths, width)
	}
	if o.GroupByShape {
		headers = append(headers, "Input Shapes")
		widths = append(widths, shapesWidth)
	}
	var sep strings.Builder
	lineLength := -spacing
	for _, w := range widths {
		sep.WriteString(strings.Repeat("-", w) + strings.Repeat(" ", spacing))
		lineLength += w + spacing
	}
	row := func(cells []string) string {
		var b strings.Builder
		for i, c := range cells {
			fmt.Fprintf(&b, "%*s%s", widths[i], c, strings.Repeat(" ", spacing))
		}
		return b.String()
	}
	var out strings.Builder
	line := func(s string) { out.WriteString(s + "\n") }
	if o.Header != "" {
		line(strings.Repeat("=", lineLength))
		line(o.Header)
	}
	line(sep.String())
	line(row(headers))
	line(sep.String())
	for i, r := range rows {
		if i == limit {
			break
		}
		name := r.Key
		if len(name) >= maxName-3 {
			name = name[:maxName-3] + "..."
		}
		cells := []string{name, share(r.SelfCPUTime, selfCPU), formatTime(r.SelfCPUTime),
			share(r.CPUTimeTotal, selfCPU), formatTime(r.CPUTimeTotal), formatTime(r.CPUTimeAvg())}
		if hasDevTime {
			cells = append(cells, formatTime(r.SelfDeviceTime), share(r.SelfDeviceTime, selfDev),
				formatTime(r.DeviceTimeTotal), formatTime(r.DeviceTimeAvg()))
		}
		cells = append(cells, FormatMemory(r.CPUMemory), FormatMemory(r.SelfCPUMemory))
		if hasDevMem {
			cells = append(cells, FormatMemory(r.DeviceMemory), FormatMemory(r.SelfDeviceMemory))
		}
		cells = append(cells, fmt.Sprint(r.Count))
		if o.GroupByShape {
			s := r.InputShapes
			if len(s) > shapesWidth {
				s = s[:shapesWidth]
			}
			cells = append(cells, s)
		}
		line(row(cells))
	}
	line(sep.String())
	line("Self CPU time total: " + formatTime(selfCPU))
	if hasDevTime {
		line("Self CUDA time total: " + formatTime(selfDev))
	}
	return out.String()
}

// formatTime writes a duration as PyTorch's _format_time: "12.345us",
// "1.234ms", "1.234s".
func formatTime(d time.Duration) string {
	us := float64(d) / float64(time.Microsecond)
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.3fs", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.3fms", us/1e3)
	}
	return fmt.Sprintf("%.3fus", us)
}

func share(d, total time.Duration) string {
	if total == 0 {
		return "NaN"
	}
	return fmt.Sprintf("%.2f%%", float64(d)*100/float64(total))
}

// FormatMemory writes bytes as PyTorch's profiler table does: "512 b",
// "1.50 Kb", "-4.00 Mb", "2.00 Gb" (binary units).
func FormatMemory(n int64) string {
	const kb, mb, gb = 1024, 1024 * 1024, 1024 * 1024 * 1024
	a := n
	if a < 0 {
		a = -a
	}
	switch {
	case a >= gb:
		return fmt.Sprintf("%.2f Gb", float64(n)/gb)
	case a >= mb:
		return fmt.Sprintf("%.2f Mb", float64(n)/mb)
	case a >= kb:
		return fmt.Sprintf("%.2f Kb", float64(n)/kb)
	}
	return fmt.Sprintf("%d b", n)
}
