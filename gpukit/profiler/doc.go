// Package profiler answers "which op allocated this?", "which phase of
// the step makes the peak?" and "what is this memory?" for gpukit
// tensors, in the formats PyTorch's torch.profiler uses, so that what a
// student learns here reads the same on a real GPU.
//
//	p, err := profiler.Start(profiler.Options{RecordShapes: true})
//	...
//	func() {
//		defer profiler.Record(profiler.Forward)() // record_function
//		loss = model(x)
//	}()
//	...
//	p.Stop()
//	table, err := p.Table(profiler.TableOptions{SortBy: "self_cuda_memory_usage", RowLimit: 10})
//	peaks, err := p.PhasePeaks(dev)
//	err = p.ExportChromeTrace("trace.json")
//	plot, err := p.TimelinePlot(dev)
//
// # What is recorded
//
// A profile sees every tensor op through the observer seam of
// gpukit/tensor (tensor.SetObserver): each storage allocated and freed
// and each kernel an op launches. An op is one kernel launch (named
// tensor::<kernel>, such as tensor::Matmul), with the input shapes
// (RecordShapes) and the file:line that called it (WithStack), its host
// time (measured) and its device time (the kernel's place on the
// device's stream clock: modelled on sim and meta devices). An op's span
// begins with the first allocation it makes (or, for an op that
// allocates nothing, when the previous event ended) and ends with its
// kernel launch; the allocations and frees made inside that span are its
// self memory. Creation functions that launch no kernel (FromSlice,
// Empty, Full) are ops of their own, named after the function. Frees
// outside any op count in the innermost range, or in the "[memory]" row
// as in PyTorch; frees by the collector fallback (a tensor dropped
// without Release) count in "[memory]", since no range's code made them. Ranges (Record) nest and total what they contain: a
// Linear range holding a matmul and an add shows both in its CUDA Mem
// and none in its Self CUDA Mem. Ops are attributed as if they ran on
// one goroutine, the training loop.
//
// The profile sees storages, not the allocator: the cuBLAS workspace that
// the first matrix product on a stream takes (device.BlasWorkspace) is in
// the allocator's totals, and so in PhasePeaks, in the trace's "Total
// Allocated" and in the Timeline's "unknown", but it is no op's memory and
// has no event of its own.
// PyTorch's profiler, which hears every caching-allocator allocation,
// counts it in the first product's memory.
//
// One profile runs at a time; Start refuses a second. With no profile
// running, each kernel an op launches pays one atomic load, and each
// allocation and free a shared lock, which orders them against a
// profile's start (gpukit/tensor's memorySeam; see
// BenchmarkStepProfilerOff).
//
// # Reports
//
// Table is prof.key_averages().table(): PyTorch's columns, widths and
// footers ("Self CPU time total", "Self CUDA time total"), memory in
// PyTorch's units ("4.00 Mb"), sortable by any column (by its header or
// PyTorch's sort_by name; an unknown one is refused with the list of
// valid ones), with a row limit and grouping by input shapes. The CUDA
// columns hold the device's time and memory whatever the device.
//
// WriteChromeTrace and ExportChromeTrace write the Chrome trace event
// format that Perfetto (ui.perfetto.dev) and chrome://tracing open,
// with the event categories and "[memory]" events of PyTorch's kineto
// exporter and a flow arrow from each launch to its kernel.
//
// Timeline classifies device memory as PyTorch's memory profiler does
// (parameter, optimizer state, input, temporary, activation, gradient,
// autograd detail, unknown) from what ops did with each storage and the
// phase ranges (Forward, Backward, OptimizerStep, ZeroGrad); the
// categories add up to the allocator's allocated bytes at every point.
// TimelinePlot draws it as a stacked area chart through gpukit/viz.
// PhasePeaks gives the peak allocated memory of each named range, equal
// to the allocator's peak counter reset at the range's start.
//
// A Monitor samples allocated, reserved and resident host memory from a
// goroutine at an interval, as a polling script does; MonitorPlot shows
// what it saw next to the allocator's peak, which it may miss entirely
// (COURSE mistake 13). It keeps at most MaxSamples samples, merging
// neighbours (their maxima) as a long run fills them, so a 1 ms monitor
// left running holds 128 KiB, not gigabytes.
package profiler
