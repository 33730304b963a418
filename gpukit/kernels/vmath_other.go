//go:build !amd64 || purego

package kernels

var useVecMath = false

func expAVX2(dst, src *float32, n int)          { panic("kernels: AVX2 exp not available") }
func logAVX2(dst, src *float32, n int)          { panic("kernels: AVX2 log not available") }
func sigmoidAVX2(dst, src *float32, n int)      { panic("kernels: AVX2 sigmoid not available") }
func tanhAVX2(dst, src *float32, n int)         { panic("kernels: AVX2 tanh not available") }
func erfAVX2(dst, src *float32, n int)          { panic("kernels: AVX2 erf not available") }
func geluAVX2(dst, src *float32, n int)         { panic("kernels: AVX2 gelu not available") }
func geluGradAVX2(dst, src *float32, n int)     { panic("kernels: AVX2 gelu not available") }
func geluTanhAVX2(dst, src *float32, n int)     { panic("kernels: AVX2 gelu not available") }
func geluTanhGradAVX2(dst, src *float32, n int) { panic("kernels: AVX2 gelu not available") }
