package dtypes

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFloat16Conversion(t *testing.T) {
	tests := []struct {
		in   float32
		bits uint16
	}{
		{0, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff}, // max half
		{65520, 0x7c00}, // rounds to +Inf (tie, even → Inf)
		{65519, 0x7bff}, // below the tie
		{1e6, 0x7c00},   // overflow
		{float32(math.Inf(-1)), 0xfc00},
		{5.960464477539063e-08, 0x0001}, // smallest subnormal 2^-24
		{2.980232238769531e-08, 0x0000}, // 2^-25: tie → even (0)
		{4.470348358154297e-08, 0x0001}, // 1.5·2^-25 → 2^-24... (above tie)
		{6.103515625e-05, 0x0400},       // smallest normal
		{1 + 1.0/2048, 0x3c00},          // tie between 1 and 1+2^-10 → even (1)
		{1 + 3.0/2048, 0x3c02},          // tie → even (1+2^-9)
		{0.1, 0x2e66},
	}
	for _, tc := range tests {
		got := Float32ToFloat16(tc.in)
		assert.Equalf(t, tc.bits, got, "Float32ToFloat16(%g)", tc.in)
	}
	assert.True(t, math.IsNaN(float64(Float16ToFloat32(Float32ToFloat16(float32(math.NaN()))))))
	roundTrips(t, "half", Float16ToFloat32, Float32ToFloat16)
}

// roundTrips checks that every 16-bit value but NaNs round-trips exactly
// through float32.
func roundTrips(t *testing.T, name string, widen func(uint16) float32, narrow func(float32) uint16) {
	t.Helper()
	for h := 0; h < 1<<16; h++ {
		f := widen(uint16(h))
		if f != f {
			continue
		}
		if back := narrow(f); back != uint16(h) {
			t.Fatalf("%s %#04x → %g → %#04x", name, h, f, back)
		}
	}
}

func TestBFloat16Conversion(t *testing.T) {
	assert.Equal(t, uint16(0x3f80), Float32ToBFloat16(1))
	assert.Equal(t, float32(1), BFloat16ToFloat32(0x3f80))
	// 1 + 2^-8 is the tie between 1 and 1+2^-7: rounds to even (1).
	assert.Equal(t, uint16(0x3f80), Float32ToBFloat16(1+1.0/256))
	assert.Equal(t, uint16(0x3f82), Float32ToBFloat16(1+3.0/256))
	assert.True(t, math.IsNaN(float64(BFloat16ToFloat32(Float32ToBFloat16(float32(math.NaN()))))))
	roundTrips(t, "bf16", BFloat16ToFloat32, Float32ToBFloat16)
}
