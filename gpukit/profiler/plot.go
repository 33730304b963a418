package profiler

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"gonum.org/v1/plot"

	"github.com/gpumem/course/gpukit/device"
	"github.com/gpumem/course/gpukit/viz"
)

// TimelinePlot draws device d's memory over the profile as a stacked area
// chart by category (x in milliseconds since Start), in the style of
// PyTorch's MemoryProfileTimeline. Show it with viz.Show.
func (p *Profile) TimelinePlot(d *device.Device) (*plot.Plot, error) {
	points, err := p.Timeline(d)
	if err != nil {
		return nil, err
	}
	x := make([]float64, len(points))
	layers := make([]viz.Series, NumCategories)
	for c := range layers {
		layers[c] = viz.Series{Name: Category(c).String(), Y: make([]float64, len(points))}
	}
	for i, pt := range points {
		x[i] = ms(pt.Time)
		for c := range layers {
			layers[c].Y[i] = float64(pt.Bytes[c])
		}
	}
	return viz.StackedSteps(fmt.Sprintf("Memory of %s by category", d.Name()), "time since start (ms)", "allocated", true, x, layers...)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MonitorPlot draws the allocated memory that each monitor saw, as steps
// from one sample to the next, next to a level (such as the allocator's
// MaxMemoryAllocated) that the samples should have reached.
func MonitorPlot(title string, peakName string, peak int64, monitors map[string][]Sample) (*plot.Plot, error) {
	var series []viz.Series
	end := 0.0
	for _, name := range slices.Sorted(maps.Keys(monitors)) {
		s := viz.Series{Name: name}
		for i, smp := range monitors[name] {
			if i > 0 {
				s.X = append(s.X, ms(smp.Time))
				s.Y = append(s.Y, s.Y[len(s.Y)-1])
			}
			s.X = append(s.X, ms(smp.Time))
			s.Y = append(s.Y, float64(smp.Allocated))
			end = max(end, ms(smp.Time))
		}
		series = append(series, s)
	}
	series = append(series, viz.HLine(peakName, float64(peak), 0, end))
	return viz.Lines(title, "time since start (ms)", "allocated", true, series...)
}
