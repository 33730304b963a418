// Shared by vmath_arm64.s and rows_arm64.s. R4 holds &·vk, R5 is scratch.

// K broadcasts the field of ·vk at offset off (go_asm.h: vconst_log2e)
// to the four lanes of v.
#define K(off, v) \
	ADD   $(off), R4, R5; \
	VLD1R (R5), [v.S4]

// EXPCONSTS loads exp32's constants into V16-V29, where EXPF expects
// them, and &·vk into R4.
#define EXPCONSTS \
	MOVD $·vk(SB), R4; \
	K(vconst_log2e, V16); \
	K(vconst_ln2Hi, V17); \
	K(vconst_ln2Lo, V18); \
	K(vconst_expC7, V19); \
	K(vconst_expC6, V20); \
	K(vconst_expC5, V21); \
	K(vconst_expC4, V22); \
	K(vconst_expC3, V23); \
	K(vconst_expC2, V24); \
	K(vconst_one, V25); \
	K(vconst_expMax, V26); \
	K(vconst_expMin, V27); \
	K(vconst_inf, V28); \
	K(vconst_bias, V29)

// EXPF: V0 = exp32(V0), four lanes. Clobbers V1-V5.
#define EXPF \
	FMUL4S(1, 0, 16); \
	FRINTN4S(1, 1); \
	VMOV  V0.B16, V3.B16; \
	VFMLS V17.S4, V1.S4, V3.S4; \
	VFMLS V18.S4, V1.S4, V3.S4; \
	VMOV  V20.B16, V5.B16; \
	VFMLA V19.S4, V3.S4, V5.S4; \
	VMOV  V21.B16, V2.B16; \
	VFMLA V5.S4, V3.S4, V2.S4; \
	VMOV  V22.B16, V5.B16; \
	VFMLA V2.S4, V3.S4, V5.S4; \
	VMOV  V23.B16, V2.B16; \
	VFMLA V5.S4, V3.S4, V2.S4; \
	VMOV  V24.B16, V5.B16; \
	VFMLA V2.S4, V3.S4, V5.S4; \
	FMUL4S(4, 3, 3); \
	VMOV  V3.B16, V2.B16; \
	VFMLA V5.S4, V4.S4, V2.S4; \
	FADD4S(5, 2, 25); \
	FCVTNS4S(1, 1); \
	SSHR4S(2, 1, 1); \
	VSUB  V2.S4, V1.S4, V1.S4; \
	VADD  V29.S4, V2.S4, V2.S4; \
	VSHL  $23, V2.S4, V2.S4; \
	VADD  V29.S4, V1.S4, V1.S4; \
	VSHL  $23, V1.S4, V1.S4; \
	FMUL4S(5, 5, 2); \
	FMUL4S(5, 5, 1); \
	FCMGT4S(3, 0, 26); \
	VBIT  V3.B16, V28.B16, V5.B16; \
	FCMGT4S(3, 27, 0); \
	BIC16B(0, 5, 3)
