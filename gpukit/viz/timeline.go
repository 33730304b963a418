package viz

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Span is one piece of work on a lane of a timeline: [Start, End) on the
// chart's time axis, drawn in the lane's colour, or in Color when set.
type Span struct {
	Start, End float64
	Label      string      // drawn inside the span when it fits
	Color      color.Color // nil: the lane's colour
}

// Lane is one row of a timeline, such as a stream.
type Lane struct {
	Name  string
	Spans []Span
}

// Timeline returns a chart with one row per lane (the first on top) and a
// box per span, the way a profiler draws streams side by side.
func Timeline(title, xLabel string, lanes ...Lane) (*plot.Plot, error) {
	if len(lanes) == 0 {
		return nil, fmt.Errorf("viz: Timeline: no lanes")
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range lanes {
		for _, s := range l.Spans {
			if !(s.End >= s.Start) || math.IsInf(s.Start, 0) || math.IsInf(s.End, 0) {
				return nil, fmt.Errorf("viz: Timeline: lane %q has a span [%v, %v); a span needs finite Start ≤ End", l.Name, s.Start, s.End)
			}
			lo, hi = math.Min(lo, s.Start), math.Max(hi, s.End)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Add(&timelineBoxes{lanes: lanes})
	p.X.Min, p.X.Max = lo, hi+(hi-lo)*0.02
	p.Y.Min, p.Y.Max = -0.5, float64(len(lanes))-0.5
	ticks := make([]plot.Tick, len(lanes))
	for i, l := range lanes {
		ticks[i] = plot.Tick{Value: float64(len(lanes) - 1 - i), Label: l.Name}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	return p, nil
}

// timelineBoxes draws the spans as filled boxes.
type timelineBoxes struct{ lanes []Lane }

func (t *timelineBoxes) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(t.lanes)
	for i, l := range t.lanes {
		y := float64(n - 1 - i)
		fill := plotutil.Color(i)
		for _, s := range l.Spans {
			col := fill
			if s.Color != nil {
				col = s.Color
			}
			x0, x1 := trX(s.Start), trX(s.End)
			y0, y1 := trY(y-0.35), trY(y+0.35)
			box := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
			c.FillPolygon(col, c.ClipPolygonXY(box))
			c.StrokeLines(draw.LineStyle{Color: color.White, Width: vg.Points(0.5)}, c.ClipLinesXY(append(box, box[0]))...)
			if s.Label != "" {
				sty := draw.TextStyle{Color: color.White, Font: plot.DefaultFont, Handler: plot.DefaultTextHandler, XAlign: draw.XCenter, YAlign: draw.YCenter}
				sty.Font.Size = vg.Points(8)
				if sty.Width(s.Label) < x1-x0 {
					c.FillText(sty, vg.Point{X: (x0 + x1) / 2, Y: (y0 + y1) / 2}, s.Label)
				}
			}
		}
	}
}
