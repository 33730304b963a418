//go:build (amd64 || arm64) && !purego

package kernels

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestVkOffsetsReadTheirConstants reads vmath_consts.h as the assembly
// does and checks that each name's offset reads, in vk, the value the
// name stands for (written here from vmath.go's constants, apart from
// the generator's list): a table and header out of step, or an entry
// that holds another constant, fail here. That both files are what go
// generate writes is internal/vmathfit's TestGeneratedFilesAreCurrent.
func TestVkOffsetsReadTheirConstants(t *testing.T) {
	f := math.Float32bits
	want := map[string]uint32{
		"LOG2E": f(log2e32), "LN2_HI": f(ln2Hi32), "LN2_LO": f(ln2Lo32),
		"EXP_C7": f(expC7), "EXP_C6": f(expC6), "EXP_C5": f(expC5),
		"EXP_C4": f(expC4), "EXP_C3": f(expC3), "EXP_C2": f(expC2),
		"ONE": f(1), "EXP_MAX": f(expMax), "EXP_MIN": f(expMin),
		"INF": f(float32(math.Inf(1))), "BIAS": 127,

		"ABS_MASK": 0x7fffffff, "SIGN_MASK": f(float32(math.Copysign(0, -1))),

		"MIN_NORMAL": f(math.SmallestNonzeroFloat32 * (1 << 23)), "TWO23": f(1 << 23),
		"BIAS150": 150, "LOG_OFF": f(1) - f(math.Sqrt2/2), "MANT_MASK": 1<<23 - 1,
		"SQRT_HALF_BITS": f(math.Sqrt2 / 2), "TWO": f(2), "HALF": f(0.5),
		"LOG_C4": f(logC4), "LOG_C3": f(logC3), "LOG_C2": f(logC2), "LOG_C1": f(logC1),
		"NEG_INF": f(float32(math.Inf(-1))), "NAN": 0x7fc00000,

		"TANH_SPLIT": f(tanhSplit), "ERF_SPLIT": f(erfSplit),
		"TANH_MAX": f(tanhMax), "ERF_MAX": f(erfMax),
		"TANH_BASE": tanhBase, "ERF_BASE": erfBase, "MAX_INDEX": 7,
		"BYTE_SPREAD": 0x01010101, "BYTE_OFFSETS": 0x03020100,

		"SQRT_HALF": f(sqrtHalf32), "PHI_NEG": f(phiNeg), "PHI_POS": f(phiPos),
		"PHI_T": f(phiT), "INV_SQRT2PI": f(invSqrt2Pi32), "PHI_HUGE": f(phiHuge),
		"ERF_P0": f(erfP0), "ERF_P1": f(erfP1), "ERF_P2": f(erfP2),
		"ERF_P3": f(erfP3), "ERF_P4": f(erfP4), "ERF_P5": f(erfP5),
		"ERF_P6": f(erfP6), "ERF_P7": f(erfP7), "ERF_P8": f(erfP8),
		"ERFC_C0": f(erfcC0),
		"ERFC_R0": f(erfcR0), "ERFC_R1": f(erfcR1), "ERFC_R2": f(erfcR2),
		"ERFC_R3": f(erfcR3), "ERFC_R4": f(erfcR4), "ERFC_R5": f(erfcR5),
		"ERFC_R6": f(erfcR6), "ERFC_R7": f(erfcR7), "ERFC_R8": f(erfcR8),
		"ERFC_R9":    f(erfcR9),
		"GELU_KAPPA": f(geluKappa), "GELU_BETA2": f(geluBeta2),
		"GELU_KAPPA3": f(3 * geluKappa), "GELU_XMAX": f(geluXMax),
		"NEG_GELU_XMAX": f(-geluXMax), "GELU_GRAD_C": f(geluGradC),
	}
	for k, g := range geluGradGs {
		want[fmt.Sprint("GELU_GRAD_G", k)] = f(g)
	}
	h, err := os.ReadFile("vmath_consts.h")
	if err != nil {
		t.Fatal(err)
	}
	defs := regexp.MustCompile(`(?m)^#define\s+(\w+)\s+(\d+)\b`).FindAllSubmatch(h, -1)
	seen := map[string]bool{}
	at := map[int]string{}
	offs := map[string]int{}
	for _, d := range defs {
		name := string(d[1])
		off, err := strconv.Atoi(string(d[2]))
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("vmath_consts.h names %s, which this test does not know", name)
		case seen[name]:
			t.Errorf("vmath_consts.h defines %s twice", name)
		case off%4 != 0 || off/4 >= len(vk):
			t.Errorf("%s = %d is not the offset of an entry of vk (%d entries)", name, off, len(vk))
		case at[off] != "":
			t.Errorf("%s and %s share offset %d", at[off], name, off)
		case vk[off/4] != w:
			t.Errorf("%s = %d reads %#08x from vk, want %#08x", name, off, vk[off/4], w)
		}
		seen[name], at[off], offs[name] = true, name, off
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("vmath_consts.h does not define %s", name)
		}
	}
	if len(at) != len(vk) {
		t.Errorf("vmath_consts.h names %d offsets, vk has %d entries", len(at), len(vk))
	}
	// arm64's EXPCONSTS broadcasts these with VLD4R and VLD2R from LOG2E
	// on, into V16-V29 in this order (vmath_arm64.h).
	for i, name := range []string{"LOG2E", "LN2_HI", "LN2_LO", "EXP_C7", "EXP_C6", "EXP_C5", "EXP_C4",
		"EXP_C3", "EXP_C2", "ONE", "EXP_MAX", "EXP_MIN", "INF", "BIAS"} {
		if offs[name] != offs["LOG2E"]+4*i {
			t.Errorf("%s = %d, want %d: EXPCONSTS needs exp32's constants in its order", name, offs[name], offs["LOG2E"]+4*i)
		}
	}
}
