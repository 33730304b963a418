package memviewer

import (
	"io"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/internal/pickle"
)

// WritePickle writes s as the pickle (protocol 2) that
// torch.cuda.memory._snapshot() would have produced and that
// torch.cuda.memory._dump_snapshot writes, so that PyTorch's tools read it:
// torch/cuda/_memory_viz.py (stats, trace, segments, memory, trace_plot,
// segment_plot) and the drag-and-drop viewer at pytorch.org/memory_viz.
//
// Keys and their order follow PyTorch's memory_snapshot.cpp:
//
//	{"segments": [{"device", "address", "total_size", "allocated_size",
//	               "active_size", "requested_size", "stream", "segment_type",
//	               "segment_pool_id", "is_expandable", "frames",
//	               "blocks": [{"address", "size", "requested_size", "state",
//	                           "frames"}]}],
//	 "device_traces": [[{"action", "addr" (or "device_free" for "oom"),
//	                     "size", "stream", "time_us", "frames"}]],
//	 "allocator_settings": {...}}
//
// Every frames list is present, empty when nothing was recorded; a frame is
// {"filename", "line", "name"}. device_traces has one list per device up to
// the highest device that has a segment or a trace.
func WritePickle(w io.Writer, s alloc.Snapshot) error {
	return pickle.NewEncoder(w).Encode(PickleValue(s))
}

// Pickle returns the bytes WritePickle writes.
func Pickle(s alloc.Snapshot) ([]byte, error) {
	return pickle.Marshal(PickleValue(s))
}

// PickleValue returns the Python value (a pickle.Dict tree) that
// WritePickle encodes.
func PickleValue(s alloc.Snapshot) pickle.Dict {
	segments := make([]any, 0, len(s.Segments))
	ndev := len(s.DeviceTraces)
	for _, seg := range s.Segments {
		ndev = max(ndev, seg.Device+1)
		blocks := make([]any, 0, len(seg.Blocks))
		for _, b := range seg.Blocks {
			blocks = append(blocks, pickle.Dict{
				{Key: "address", Value: b.Address},
				{Key: "size", Value: b.Size},
				{Key: "requested_size", Value: b.RequestedSize},
				{Key: "state", Value: b.State},
				{Key: "frames", Value: frames(b.Frames)},
			})
		}
		segType := seg.SegmentType
		if segType == "" {
			segType = "large"
		}
		segments = append(segments, pickle.Dict{
			{Key: "device", Value: seg.Device},
			{Key: "address", Value: seg.Address},
			{Key: "total_size", Value: seg.TotalSize},
			{Key: "allocated_size", Value: seg.AllocatedSize},
			{Key: "active_size", Value: seg.ActiveSize},
			{Key: "requested_size", Value: seg.RequestedSize},
			{Key: "stream", Value: int64(seg.Stream)},
			{Key: "segment_type", Value: segType},
			{Key: "segment_pool_id", Value: pickle.Tuple{0, 0}},
			{Key: "is_expandable", Value: seg.IsExpandable},
			{Key: "frames", Value: frames(seg.Frames)},
			{Key: "blocks", Value: blocks},
		})
	}
	traces := make([]any, max(ndev, 1))
	for i := range traces {
		var entries []alloc.TraceEntry
		if i < len(s.DeviceTraces) {
			entries = s.DeviceTraces[i]
		}
		list := make([]any, 0, len(entries))
		for _, e := range entries {
			addrKey, addr := "addr", any(e.Addr)
			if e.Action == alloc.ActionOOM {
				addrKey, addr = "device_free", e.DeviceFree
			}
			list = append(list, pickle.Dict{
				{Key: "action", Value: e.Action},
				{Key: addrKey, Value: addr},
				{Key: "size", Value: e.Size},
				{Key: "stream", Value: int64(e.Stream)},
				{Key: "time_us", Value: e.TimeMicros},
				{Key: "frames", Value: frames(e.Frames)},
			})
		}
		traces[i] = list
	}
	settings := s.AllocatorSettings
	if settings == nil {
		settings = map[string]any{}
	}
	return pickle.Dict{
		{Key: "segments", Value: segments},
		{Key: "device_traces", Value: traces},
		{Key: "allocator_settings", Value: settings},
	}
}

func frames(fs []alloc.Frame) []any {
	out := make([]any, 0, len(fs))
	for _, f := range fs {
		out = append(out, pickle.Dict{
			{Key: "filename", Value: f.Filename},
			{Key: "line", Value: f.Line},
			{Key: "name", Value: f.Name},
		})
	}
	return out
}
