// Command shardmem measures, per card, the memory and time of one
// mixed-precision training step under data parallelism (stage 0) and
// ZeRO's stages 1-3, on simulated meta cards, and sets the model states
// it measured beside ZeRO's formula. A 70 B-parameter model on 512
// cards takes seconds.
//
//	go run ./gpukit/cmd/shardmem --params 7.5e9 --devices 64
//	go run ./gpukit/cmd/shardmem --params 70e9 --devices 512 --stage 3 --card h100 --format json
//	go run ./gpukit/cmd/shardmem --params 7.5e9 --nodes 8 --cards-per-node 8 --node dgx-h100
//
// See the usage text (shardmem -h) for the flags; gpukit/distributed's
// MeasureMemory does the work.
package main
