// Package profile holds the figures of the cards and nodes gpukit models
// (capacity, CUDA context, bandwidths, FLOP rates, links) and the cost
// model that turns them into time: what a kernel, a copy, a cudaMalloc
// or a transfer between cards costs on a simulated card. It is a leaf
// below the backends: gpukit/device re-exports its names, so user code
// reads device.Profile and device.LookupProfile.
package profile
