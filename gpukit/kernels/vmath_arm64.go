//go:build !purego

package kernels

// The NEON forms of vmath.go's functions, in vmath_arm64.s, four lanes
// at a time. Each is the Go loop under the same name in vmath_other.go,
// bit for bit (TestVecMatchesScalar): the same operations in the same
// order, every fma32 one FMLA or FMLS (one rounding, as fma32's), every
// other product rounded on its own, and every branch of a piecewise
// formula computed, then the lanes blended. n is a multiple of 8.

// useVecMath is true: Advanced SIMD, FMLA included, is part of every
// ARMv8-A core, so there is nothing to detect. Tests set it to false to
// run the Go loops of the callers instead.
var useVecMath = true

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

// vconst holds the constants of vmath_arm64.s and rows_arm64.s, which
// broadcast each from the offset go_asm.h names after its field
// (vconst_log2e). Integer constants are bit patterns or int32 lanes.
type vconst struct {
	// exp32, kept in V16-V29 by every function that calls EXPF.
	log2e, ln2Hi, ln2Lo                      float32
	expC7, expC6, expC5, expC4, expC3, expC2 float32
	one, expMax, expMin                      float32
	inf, bias, signMask                      uint32

	// log32.
	minNormal, two23           float32
	bias150, logOff, mantMask  uint32
	sqrtHalfBits               uint32
	two, half                  float32
	logC4, logC3, logC2, logC1 float32
	negInf, nan                uint32

	// tanh32 and erf32.
	split, tanhMax, erfMax float32
	tanhBase, erfBase      uint32
	maxIndex, byteSpread   uint32 // 7; 0x01010101 copies a byte to the four of a lane
	byteOffsets            uint32 // 0x03020100: the bytes of lane i are 4i+0..3

	// phiGauss and the GELUs.
	sqrtHalf, phiNeg, phiPos, phiT, invSqrt2Pi, phiHuge float32
	erfP0, erfP1, erfP2, erfP3, erfP4                   float32
	erfP5, erfP6, erfP7, erfP8                          float32
	erfcC0                                              float32
	erfcR0, erfcR1, erfcR2, erfcR3, erfcR4              float32
	erfcR5, erfcR6, erfcR7, erfcR8, erfcR9              float32
	geluKappa, geluBeta2, geluKappa3, geluXMax          float32
	negGeluXMax                                         float32
}

var vk = vconst{
	log2e: log2e32, ln2Hi: ln2Hi32, ln2Lo: ln2Lo32,
	expC7: expC7, expC6: expC6, expC5: expC5, expC4: expC4, expC3: expC3, expC2: expC2,
	one: 1, expMax: expMax, expMin: expMin,
	inf: 0x7f800000, bias: 127, signMask: 0x80000000,

	minNormal: 0x1p-126, two23: 0x1p23,
	bias150: 150, logOff: 0x3f800000 - 0x3f3504f3, mantMask: 0x007fffff,
	sqrtHalfBits: 0x3f3504f3,
	two:          2, half: 0.5,
	logC4: logC4, logC3: logC3, logC2: logC2, logC1: logC1,
	negInf: 0xff800000, nan: 0x7fc00000,

	split: tanhSplit, tanhMax: tanhMax, erfMax: erfMax,
	tanhBase: tanhBase, erfBase: erfBase,
	maxIndex: 7, byteSpread: 0x01010101, byteOffsets: 0x03020100,

	sqrtHalf: sqrtHalf32, phiNeg: phiNeg, phiPos: phiPos, phiT: phiT, invSqrt2Pi: invSqrt2Pi32, phiHuge: phiHuge,
	erfP0: erfP0, erfP1: erfP1, erfP2: erfP2, erfP3: erfP3, erfP4: erfP4,
	erfP5: erfP5, erfP6: erfP6, erfP7: erfP7, erfP8: erfP8,
	erfcC0: erfcC0,
	erfcR0: erfcR0, erfcR1: erfcR1, erfcR2: erfcR2, erfcR3: erfcR3, erfcR4: erfcR4,
	erfcR5: erfcR5, erfcR6: erfcR6, erfcR7: erfcR7, erfcR8: erfcR8, erfcR9: erfcR9,
	geluKappa: geluKappa, geluBeta2: geluBeta2, geluKappa3: 3 * geluKappa, geluXMax: geluXMax,
	negGeluXMax: -geluXMax,
}

// The assembly unrolls the polynomials of vmath_tables.go: a fit of
// another degree (internal/vmathfit) fails to compile here until
// vmath_arm64.s follows.
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
