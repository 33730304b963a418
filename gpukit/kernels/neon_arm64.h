// NEON instructions Go's arm64 assembler does not spell, as WORD
// encodings (Arm A64 ISA, "Advanced SIMD"). Shared by vmath_*_arm64.s,
// rows_arm64.s and sgemm_kernel_arm64.s.
//
// Operands are register numbers in Arm's order, destination first:
// FADD4S(3, 1, 2) is FADD V3.4S, V1.4S, V2.4S (V3 = V1 + V2). The
// instructions Go does spell (VFMLA, VFMLS, VBIT, VADD, VSHL, VTBL, ...)
// are written in Go's order, sources first, in the .s files.

// Single precision, four lanes.
#define FADD4S(d, n, m)   WORD $(0x4E20D400 | ((m)<<16) | ((n)<<5) | (d))
#define FSUB4S(d, n, m)   WORD $(0x4EA0D400 | ((m)<<16) | ((n)<<5) | (d))
#define FMUL4S(d, n, m)   WORD $(0x6E20DC00 | ((m)<<16) | ((n)<<5) | (d))
#define FDIV4S(d, n, m)   WORD $(0x6E20FC00 | ((m)<<16) | ((n)<<5) | (d))
#define FMAX4S(d, n, m)   WORD $(0x4E20F400 | ((m)<<16) | ((n)<<5) | (d))
#define FMIN4S(d, n, m)   WORD $(0x4EA0F400 | ((m)<<16) | ((n)<<5) | (d))
// Comparisons set a lane to all ones where they hold (false for NaN).
#define FCMEQ4S(d, n, m)  WORD $(0x4E20E400 | ((m)<<16) | ((n)<<5) | (d))
#define FCMGE4S(d, n, m)  WORD $(0x6E20E400 | ((m)<<16) | ((n)<<5) | (d))
#define FCMGT4S(d, n, m)  WORD $(0x6EA0E400 | ((m)<<16) | ((n)<<5) | (d))
#define FABS4S(d, n)      WORD $(0x4EA0F800 | ((n)<<5) | (d))
#define FNEG4S(d, n)      WORD $(0x6EA0F800 | ((n)<<5) | (d))
// FRINTN rounds to the nearest integer, ties to even (VROUNDPS $0).
#define FRINTN4S(d, n)    WORD $(0x4E218800 | ((n)<<5) | (d))
// FCVTNS converts to int32, nearest (the value is already an integer).
#define FCVTNS4S(d, n)    WORD $(0x4E21A800 | ((n)<<5) | (d))
// SCVTF converts int32 lanes to float32.
#define SCVTF4S(d, n)     WORD $(0x4E21D800 | ((n)<<5) | (d))
// FMAXV: the largest of the four lanes, into lane 0 of Vd.
#define FMAXV4S(d, n)     WORD $(0x6E30F800 | ((n)<<5) | (d))
// FMLA by element: Vd += Vn · Vm.S[idx], one rounding.
#define FMLAE4S(d, n, m, idx) WORD $(0x4F801000 | (((idx)&1)<<21) | ((m)<<16) | (((idx)>>1)<<11) | ((n)<<5) | (d))

// Integer lanes.
#define SSHR4S(d, n, s)   WORD $(0x4F000400 | ((64-(s))<<16) | ((n)<<5) | (d))
#define MUL4S(d, n, m)    WORD $(0x4EA09C00 | ((m)<<16) | ((n)<<5) | (d))
#define BIC16B(d, n, m)   WORD $(0x4E601C00 | ((m)<<16) | ((n)<<5) | (d))

// Double precision, two lanes: FCVTL widens lanes 0-1 of Vn, FCVTL2
// lanes 2-3.
#define FCVTL2D(d, n)     WORD $(0x0E617800 | ((n)<<5) | (d))
#define FCVTL22D(d, n)    WORD $(0x4E617800 | ((n)<<5) | (d))
#define FADD2D(d, n, m)   WORD $(0x4E60D400 | ((m)<<16) | ((n)<<5) | (d))
#define FSUB2D(d, n, m)   WORD $(0x4EE0D400 | ((m)<<16) | ((n)<<5) | (d))
#define FMUL2D(d, n, m)   WORD $(0x6E60DC00 | ((m)<<16) | ((n)<<5) | (d))
