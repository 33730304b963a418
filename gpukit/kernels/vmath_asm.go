//go:build (amd64 || arm64) && !purego

package kernels

// The assembly functions of vmath.go's vector forms, declared once for
// both architectures: vmath_amd64.go and vmath_arm64.go say how each
// architecture runs them, vmath_other.go holds the Go loops of the same
// names that they equal.

// expVec is
//
//	for i := range n { dst[i] = exp32(src[i]) }
//
//go:noescape
func expVec(dst, src *float32, n int)

// logVec is
//
//	for i := range n { dst[i] = log32(src[i]) }
//
//go:noescape
func logVec(dst, src *float32, n int)

// sigmoidVec is
//
//	for i := range n { dst[i] = sigmoid32(src[i]) }
//
//go:noescape
func sigmoidVec(dst, src *float32, n int)

// geluTanhVec is
//
//	for i := range n { dst[i] = geluTanh32(src[i]) }
//
//go:noescape
func geluTanhVec(dst, src *float32, n int)

// geluTanhGradVec is
//
//	for i := range n { dst[i] = geluTanhGrad32(src[i]) }
//
//go:noescape
func geluTanhGradVec(dst, src *float32, n int)

// tanhVec is
//
//	for i := range n { dst[i] = tanh32(src[i]) }
//
//go:noescape
func tanhVec(dst, src *float32, n int)

// erfVec is
//
//	for i := range n { dst[i] = erf32(src[i]) }
//
//go:noescape
func erfVec(dst, src *float32, n int)

// geluVec is
//
//	for i := range n { dst[i] = gelu32(src[i]) }
//
//go:noescape
func geluVec(dst, src *float32, n int)

// geluGradVec is
//
//	for i := range n { dst[i] = geluGrad32(src[i]) }
//
//go:noescape
func geluGradVec(dst, src *float32, n int)

// The assembly unrolls the polynomials of vmath_tables.go: a fit of
// another degree (internal/vmathfit) fails to compile here until
// vmath_tanherf_amd64.s and vmath_tanherf_arm64.s follow.
var (
	_ [len(tanhT) - 7]struct{}
	_ [7 - len(tanhT)]struct{}
	_ [len(erfT) - 7]struct{}
	_ [7 - len(erfT)]struct{}
	_ [len(tanhQ) - 8]struct{}
	_ [8 - len(tanhQ)]struct{}
	_ [len(erfQ) - 9]struct{}
	_ [9 - len(erfQ)]struct{}
)
