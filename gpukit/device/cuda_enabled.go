//go:build cuda

package device

import "github.com/gpumem/course/gpukit/device/cuda"

func init() {
	openCUDA = func(index int) (Backend, error) { return cuda.Open(index) }
}
