package alloc

// The snapshot types mirror the dictionary that PyTorch's
// torch.cuda.memory._snapshot() returns, field for field, so that a snapshot
// written as a pickle is read by PyTorch's own tools. JSON names are the
// Python keys.

// Snapshot is the allocator's state and recorded history at one moment.
type Snapshot struct {
	Segments          []Segment      `json:"segments"`
	DeviceTraces      [][]TraceEntry `json:"device_traces"`
	AllocatorSettings map[string]any `json:"allocator_settings"`
}

// Segment is one raw device allocation and the blocks it is split into. An
// expandable segment appears as one Segment per contiguous run of mapped
// pages, with IsExpandable set, as in PyTorch's snapshot.
type Segment struct {
	Device        int         `json:"device"`
	Address       uint64      `json:"address"`
	TotalSize     int64       `json:"total_size"`
	AllocatedSize int64       `json:"allocated_size"`
	ActiveSize    int64       `json:"active_size"`
	RequestedSize int64       `json:"requested_size"`
	Stream        Stream      `json:"stream"`
	SegmentType   string      `json:"segment_type"` // "small" or "large"
	IsExpandable  bool        `json:"is_expandable"`
	Frames        []Frame     `json:"frames"`
	Blocks        []BlockInfo `json:"blocks"`
}

// Block states, as PyTorch names them.
const (
	StateActiveAllocated   = "active_allocated"
	StateActivePendingFree = "active_pending_free"
	StateInactive          = "inactive"
)

// BlockInfo describes one block of a segment in a snapshot.
type BlockInfo struct {
	Address       uint64  `json:"address"`
	Size          int64   `json:"size"`
	RequestedSize int64   `json:"requested_size"`
	State         string  `json:"state"`
	Frames        []Frame `json:"frames"`
}

// Trace actions, as PyTorch names them.
const (
	ActionAlloc         = "alloc"
	ActionFreeRequested = "free_requested"
	ActionFreeCompleted = "free_completed"
	ActionSegmentAlloc  = "segment_alloc"
	ActionSegmentFree   = "segment_free"
	ActionSegmentMap    = "segment_map"   // pages mapped into an expandable segment
	ActionSegmentUnmap  = "segment_unmap" // pages of an expandable segment unmapped
	ActionOOM           = "oom"
	ActionSnapshot      = "snapshot"
)

// TraceEntry is one recorded allocator event.
type TraceEntry struct {
	Action     string  `json:"action"`
	Addr       uint64  `json:"addr"`
	Size       int64   `json:"size"`
	Stream     Stream  `json:"stream"`
	TimeMicros int64   `json:"time_us"`
	DeviceFree int64   `json:"device_free,omitempty"` // oom entries: free device bytes
	Frames     []Frame `json:"frames"`
}

// Frame is one Go stack frame of the code that caused an event.
type Frame struct {
	Filename string `json:"filename"`
	Line     int    `json:"line"`
	Name     string `json:"name"`
}
