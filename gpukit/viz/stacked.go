package viz

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// StackedSteps returns a stacked area chart of layers that change in
// steps, as memory does: layer i's value holds from X[j] until X[j+1].
// All layers share x; the top edge of the stack is the sum of the layers
// (bytes when bytesAxis is set). Layers that are zero throughout are left
// out of the legend.
func StackedSteps(title, xLabel, yLabel string, bytesAxis bool, x []float64, layers ...Series) (*plot.Plot, error) {
	p := newPlot(title, xLabel, yLabel, bytesAxis)
	if len(x) == 0 {
		return nil, fmt.Errorf("viz: StackedSteps needs at least one x value")
	}
	lower := make([]float64, len(x))
	top := 0.0
	for i, l := range layers {
		if len(l.Y) != len(x) {
			return nil, fmt.Errorf("viz: layer %q has %d values for %d x values", l.Name, len(l.Y), len(x))
		}
		upper := make([]float64, len(x))
		nonzero := false
		for j := range x {
			upper[j] = lower[j] + l.Y[j]
			nonzero = nonzero || l.Y[j] != 0
			top = math.Max(top, upper[j])
		}
		if nonzero {
			poly, err := plotter.NewPolygon(stepOutline(x, lower, upper))
			if err != nil {
				return nil, fmt.Errorf("viz: layer %q: %w", l.Name, err)
			}
			poly.Color = plotutil.Color(i)
			poly.LineStyle.Width = 0
			p.Add(poly)
			p.Legend.Add(l.Name, poly)
		}
		lower = upper
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(8)
	headroom(p, top, 1.45)
	return p, nil
}

// stepOutline is the outline of the band between two step functions.
func stepOutline(x, lower, upper []float64) plotter.XYs {
	var pts plotter.XYs
	for j := range x {
		if j > 0 {
			pts = append(pts, plotter.XY{X: x[j], Y: upper[j-1]})
		}
		pts = append(pts, plotter.XY{X: x[j], Y: upper[j]})
	}
	for j := len(x) - 1; j >= 0; j-- {
		pts = append(pts, plotter.XY{X: x[j], Y: lower[j]})
		if j > 0 {
			pts = append(pts, plotter.XY{X: x[j], Y: lower[j-1]})
		}
	}
	return pts
}

// HLine returns a horizontal line series at y across [x0, x1], for a
// level such as a peak drawn over a chart of samples.
func HLine(name string, y, x0, x1 float64) Series {
	return Series{Name: name, X: []float64{x0, x1}, Y: []float64{y, y}}
}
