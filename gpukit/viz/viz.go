package viz

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"time"

	"github.com/janpfeifer/gonb/gonbui"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Default chart size, chosen to fit a notebook column.
const (
	Width  = 7 * vg.Inch
	Height = 3.5 * vg.Inch
)

// Series is one named line of a chart.
type Series struct {
	Name string
	X, Y []float64
}

// Lines returns a line chart of the series. Y values are bytes when
// bytesAxis is set: the axis is then labelled in KiB, MiB or GiB.
func Lines(title, xLabel, yLabel string, bytesAxis bool, series ...Series) (*plot.Plot, error) {
	p := newPlot(title, xLabel, yLabel, bytesAxis)
	top := 0.0
	for i, s := range series {
		if len(s.X) != len(s.Y) {
			return nil, fmt.Errorf("viz: series %q has %d x values and %d y values", s.Name, len(s.X), len(s.Y))
		}
		points := make(plotter.XYs, len(s.X))
		for j := range s.X {
			points[j] = plotter.XY{X: s.X[j], Y: s.Y[j]}
			top = math.Max(top, s.Y[j])
		}
		line, err := plotter.NewLine(points)
		if err != nil {
			return nil, fmt.Errorf("viz: series %q: %w", s.Name, err)
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(2)
		p.Add(line)
		if s.Name != "" {
			p.Legend.Add(s.Name, line)
		}
	}
	// The legend sits in the top left corner; room above the highest
	// point keeps it off the lines.
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(8)
	p.Legend.YOffs = -vg.Points(6)
	headroom(p, top, 1+0.12*float64(len(series)))
	return p, nil
}

// headroom raises the top of the y axis to factor × top.
func headroom(p *plot.Plot, top, factor float64) {
	if top > 0 {
		p.Y.Max = math.Max(p.Y.Max, top*factor)
	}
}

// Bars returns a bar chart with one bar per label.
func Bars(title, yLabel string, bytesAxis bool, labels []string, values []float64) (*plot.Plot, error) {
	if len(labels) != len(values) {
		return nil, fmt.Errorf("viz: %d labels for %d values", len(labels), len(values))
	}
	p := newPlot(title, "", yLabel, bytesAxis)
	bars, err := plotter.NewBarChart(plotter.Values(values), vg.Points(40))
	if err != nil {
		return nil, fmt.Errorf("viz: %w", err)
	}
	bars.Color = color.RGBA{R: 0x3b, G: 0x75, B: 0xaf, A: 0xff}
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.6, float64(len(values))-0.4 // half a bar of margin on each side

	// Each bar carries its value, so a bar too small to see still reads.
	top := 0.0
	points := make(plotter.XYs, len(values))
	texts := make([]string, len(values))
	for i, v := range values {
		points[i] = plotter.XY{X: float64(i), Y: v}
		top = math.Max(top, v)
		if bytesAxis {
			texts[i] = FormatBytes(int64(v))
		} else {
			texts[i] = fmt.Sprintf("%.4g", v)
		}
	}
	valueLabels, err := plotter.NewLabels(plotter.XYLabels{XYs: points, Labels: texts})
	if err != nil {
		return nil, fmt.Errorf("viz: %w", err)
	}
	for i := range valueLabels.TextStyle {
		valueLabels.TextStyle[i].XAlign = draw.XCenter
	}
	valueLabels.Offset = vg.Point{Y: vg.Points(3)}
	p.Add(valueLabels)
	headroom(p, top, 1.15)
	return p, nil
}

func newPlot(title, xLabel, yLabel string, bytesAxis bool) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	if bytesAxis {
		p.Y.Tick.Marker = ByteTicks{}
		p.Y.Min = 0
	}
	return p
}

// ByteTicks labels an axis of byte counts at round numbers of B, KiB, MiB
// or GiB (16 MiB, 32 MiB, … rather than 47.68 MiB).
type ByteTicks struct{}

// Ticks implements plot.Ticker.
func (ByteTicks) Ticks(min, max float64) []plot.Tick {
	if max <= min {
		return plot.DefaultTicks{}.Ticks(min, max)
	}
	unit := 1.0
	for unit*1024 <= math.Max(math.Abs(min), math.Abs(max)) && unit < 1<<40 {
		unit *= 1024
	}
	// A step of 1, 2, 4, 8, … units (or a fraction of a unit) gives four to
	// eight major ticks.
	step := unit
	for (max-min)/step > 8 {
		step *= 2
	}
	for (max-min)/step < 4 && step > 1 {
		step /= 2
	}
	var ticks []plot.Tick
	for v := math.Ceil(min/step) * step; v <= max; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: FormatBytes(int64(v))})
		if minor := v + step/2; minor < max {
			ticks = append(ticks, plot.Tick{Value: minor})
		}
	}
	return ticks
}

// FormatBytes writes n in the largest binary unit that keeps it at least 1,
// with two decimals, as PyTorch's memory summary does: "20.00 MiB".
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v := float64(n)
	i := 0
	for (v >= 1024 || v <= -1024) && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.2f %s", v, units[i])
}

// PNG renders p at the given size (Width and Height when zero).
func PNG(p *plot.Plot, width, height vg.Length) ([]byte, error) {
	return render(p, width, height, "png")
}

// SVG renders p at the given size (Width and Height when zero).
func SVG(p *plot.Plot, width, height vg.Length) ([]byte, error) {
	return render(p, width, height, "svg")
}

func render(p *plot.Plot, width, height vg.Length, format string) ([]byte, error) {
	if width == 0 {
		width = Width
	}
	if height == 0 {
		height = Height
	}
	w, err := p.WriterTo(width, height, format)
	if err != nil {
		return nil, fmt.Errorf("viz: %w", err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("viz: %w", err)
	}
	return buf.Bytes(), nil
}

// Show displays p in the notebook as a PNG of the default size, and returns
// once GoNB has it (a cell may end right after). Outside a notebook it does
// nothing.
func Show(p *plot.Plot) error {
	if !gonbui.IsNotebook {
		return nil
	}
	png, err := PNG(p, 0, 0)
	if err != nil {
		return err
	}
	gonbui.DisplayPNG(png)
	return syncDisplay()
}

// ShowHTML displays html in the notebook, and returns once GoNB has it.
// Outside a notebook it does nothing.
func ShowHTML(html string) {
	if !gonbui.IsNotebook {
		return
	}
	gonbui.DisplayHTML(html)
	syncDisplay()
}

// syncTimeout bounds the wait for GoNB in syncDisplay.
const syncTimeout = 30 * time.Second

// syncDisplay waits until GoNB has read what the program sent it. GoNB's
// kernel stops reading its pipe as soon as the cell's program exits
// (gonb v0.11.4, internal/jpyexec/namedpipes.go), so a plot shown last,
// with the program ending right after, could be lost: once in a few runs
// of make image-test's browser session the welcome lesson's plot never
// appeared. gonbui.Sync returns once the kernel acknowledges a request
// sent after the plot, which it reads in order. A kernel that never
// answers is given syncTimeout, not the rest of the cell's time.
func syncDisplay() error {
	done := make(chan struct{})
	go func() {
		gonbui.Sync()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-time.After(syncTimeout):
		return fmt.Errorf("viz: GoNB did not confirm the display within %v", syncTimeout)
	}
}

// InNotebook reports whether the program runs as a GoNB notebook cell.
func InNotebook() bool { return gonbui.IsNotebook }
