package viz

import (
	"fmt"
	"slices"

	"gonum.org/v1/plot"
)

// DeviceMemory returns a chart of the allocated memory of several devices
// over time, one step line per device on one plot (a device's memory
// holds its value until its next sample). Each series is one device: X
// the times of its samples, increasing, Y the bytes allocated then.
// Draw it beside a Timeline of the same run to see which work holds the
// memory.
func DeviceMemory(title, xLabel string, devices ...Series) (*plot.Plot, error) {
	if len(devices) == 0 {
		return nil, fmt.Errorf("viz: DeviceMemory %q: no devices", title)
	}
	steps := make([]Series, len(devices))
	for i, d := range devices {
		if len(d.X) != len(d.Y) {
			return nil, fmt.Errorf("viz: device %q has %d times and %d values", d.Name, len(d.X), len(d.Y))
		}
		if !slices.IsSorted(d.X) {
			return nil, fmt.Errorf("viz: device %q: the times must not decrease", d.Name)
		}
		steps[i] = stepSeries(d)
	}
	return Lines(title, xLabel, "allocated", true, steps...)
}

// stepSeries turns samples into the corners of a step function.
func stepSeries(s Series) Series {
	out := Series{Name: s.Name}
	for j := range s.X {
		if j > 0 {
			out.X = append(out.X, s.X[j])
			out.Y = append(out.Y, s.Y[j-1])
		}
		out.X = append(out.X, s.X[j])
		out.Y = append(out.Y, s.Y[j])
	}
	return out
}
