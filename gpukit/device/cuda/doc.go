// Package cuda is the GPU backend of gpukit/device, built only with
// `-tags cuda` on a machine with an NVIDIA GPU and the CUDA 11.8 or 12
// toolkit headers (gorgonia.org/cu v0.9.6 does not build against CUDA 13).
//
// It uses gorgonia.org/cu (the CUDA driver API): cuMemAlloc and cuMemFree
// for raw memory, cuMemcpy{HtoD,DtoH,DtoD,Peer}[Async] for copies, streams,
// timed events and cuMemGetInfo. Pinned host memory comes from
// cuMemHostAlloc and cuMemFreeHost through a few lines of cgo, since cu does
// not wrap them.
//
// cu's package initialisation calls os.Exit(1) when no GPU is present, so
// only files with the cuda build tag import it; without the tag this
// package is empty and device.Open("cuda:N") explains how to rebuild.
//
// Differences from the sim backend: clocks are real (Now is the wall time
// since the device was opened), Launch has nothing to run and does nothing,
// StreamClock synchronizes the stream and returns Now, and Bytes is nil (use
// the copies). The Profile is read from the device (name, total memory,
// memory bandwidth from the memory clock and bus width); the other figures
// come from the built-in profile of the same card, when there is one.
package cuda
