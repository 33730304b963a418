package parallel

import "time"

// Interval is a stretch of work on a stage's device: the copy of
// micro-batch Micro's input onto the device, then its forward; or, when
// Backward is set, the copy of its output's gradient onto the device,
// then its backward.
type Interval struct {
	Stage, Micro int
	Backward     bool
	Start, End   time.Duration
	CopyEnd      time.Duration // Start..CopyEnd is the copy, CopyEnd..End the forward or backward
	// Mem is the stage device's allocated memory around the interval
	// (ScheduleStep of a ForwardBackward only).
	Mem Allocated
}

// Timeline is the schedule of a pipelined forward pass (GPipe), or of a
// training step (in the pipeline's Order).
type Timeline struct {
	Intervals []Interval
	Total     time.Duration   // from the first start to the last end
	Busy      []time.Duration // per stage: copies and forwards
	// Bubble is the share of the stages' time spent idle:
	// 1 - Σ Busy / (stages · Total).
	Bubble float64
}

// Schedule lays out measured durations as GPipe runs them: each device
// works on one micro-batch at a time, in order, and micro-batch m starts
// on stage s once stage s is done with m-1 and stage s-1 is done with m;
// the copy onto stage s runs first, on stage s's device. With one
// micro-batch it is naive model parallelism: one device works at a time.
func Schedule(m Measured) Timeline {
	S := len(m.Compute)
	if S == 0 {
		return Timeline{}
	}
	M := len(m.Compute[0])
	end := grid(S, M)
	tl := Timeline{Busy: make([]time.Duration, S)}
	for mb := range M {
		for s := range S {
			var start time.Duration
			if mb > 0 {
				start = end[s][mb-1]
			}
			if s > 0 {
				start = max(start, end[s-1][mb])
			}
			copyEnd := start + m.Copy[s][mb]
			end[s][mb] = copyEnd + m.Compute[s][mb]
			tl.Intervals = append(tl.Intervals, Interval{Stage: s, Micro: mb, Start: start, CopyEnd: copyEnd, End: end[s][mb]})
			tl.Busy[s] += end[s][mb] - start
			tl.Total = max(tl.Total, end[s][mb])
		}
	}
	tl.Bubble = bubble(tl, S)
	return tl
}

// Memory returns the allocated memory of stage's device through the
// timeline, as samples: at the start of each of its intervals, after the
// copy in, and at the end, in time order. Between two samples the memory
// does not change. Only a ScheduleStep timeline carries memory.
func (tl Timeline) Memory(stage int) (at []time.Duration, allocated []int64) {
	for _, iv := range tl.Intervals {
		if iv.Stage != stage {
			continue
		}
		at = append(at, iv.Start, iv.CopyEnd, iv.End)
		allocated = append(allocated, iv.Mem.Start, iv.Mem.Copied, iv.Mem.End)
	}
	return at, allocated
}
