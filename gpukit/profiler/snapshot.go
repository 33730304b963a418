package profiler

import (
	"fmt"

	"github.com/gpumem/course/gpukit/alloc"
	"github.com/gpumem/course/gpukit/viz/memviewer"
	"github.com/gpumem/course/internal/atomicfile"
)

// DumpSnapshot writes s as the pickle that torch.cuda.memory._dump_snapshot
// writes, through a temporary file renamed when complete. PyTorch's
// torch/cuda/_memory_viz.py reads it (python _memory_viz.py stats FILE,
// trace_plot FILE -o trace.html, segment_plot FILE -o segments.html), and
// so does the viewer at https://pytorch.org/memory_viz.
func DumpSnapshot(path string, s alloc.Snapshot) error {
	if err := atomicfile.CheckWritable(path); err != nil {
		return fmt.Errorf("profiler: cannot write the snapshot to %s: %w", path, err)
	}
	data, err := memviewer.Pickle(s)
	if err != nil {
		return fmt.Errorf("profiler: %w", err)
	}
	if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("profiler: writing the snapshot to %s: %w", path, err)
	}
	return nil
}
