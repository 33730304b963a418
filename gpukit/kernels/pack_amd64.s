//go:build !purego

#include "textflag.h"

// func packTranspose4AVX(dst *float32, ldd int, src *float32, lds int, n int)
//
// Transposes 4 rows of n float32 values (row r at src + r·lds) into n groups
// of 4: the values of column p go to dst[p·ldd : p·ldd+4]. n must be a
// positive multiple of 8. This is the packing of a non-transposed A into
// MR-row slivers (ldd = MR) and of a transposed B into NR-column slivers
// (ldd = NR): four rows at a time, eight columns per iteration, 4 loads,
// 8 shuffles and 8 stores for 32 values, where the scalar loop takes 32
// loads and 32 stores to addresses a sliver apart.
// TRANSPOSEARGS loads packTranspose4AVX's and packTranspose2AVX's
// arguments: DI = dst, SI = src, CX = n, R10 = the bytes between two
// columns' groups in dst, R8 between two rows of src, R11 dst's advance
// per 8 columns.
#define TRANSPOSEARGS \
	MOVQ dst+0(FP), DI; \
	MOVQ ldd+8(FP), R10; \
	MOVQ src+16(FP), SI; \
	MOVQ lds+24(FP), R8; \
	MOVQ n+32(FP), CX; \
	SHLQ $2, R10; \
	SHLQ $2, R8; \
	MOVQ R10, R11; \
	SHLQ $3, R11

TEXT ·packTranspose4AVX(SB), NOSPLIT, $0-40
	TRANSPOSEARGS
	LEAQ (SI)(R8*2), R9
	ADDQ R8, R9             // R9 = row 3

loop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R8*1), Y1
	VMOVUPS (SI)(R8*2), Y2
	VMOVUPS (R9), Y3
	// Per 128-bit lane: Y4 = r0c0 r1c0 r0c1 r1c1, Y5 = r0c2 r1c2 r0c3 r1c3,
	// Y6 and Y7 the same for rows 2 and 3.
	VUNPCKLPS Y1, Y0, Y4
	VUNPCKHPS Y1, Y0, Y5
	VUNPCKLPS Y3, Y2, Y6
	VUNPCKHPS Y3, Y2, Y7
	// Y0..Y3 = columns 0..3 of the four rows in the low lane, 4..7 in the
	// high lane.
	VSHUFPS $0x44, Y6, Y4, Y0
	VSHUFPS $0xEE, Y6, Y4, Y1
	VSHUFPS $0x44, Y7, Y5, Y2
	VSHUFPS $0xEE, Y7, Y5, Y3
	MOVQ DI, AX
	VMOVUPS X0, (AX)
	ADDQ R10, AX
	VMOVUPS X1, (AX)
	ADDQ R10, AX
	VMOVUPS X2, (AX)
	ADDQ R10, AX
	VMOVUPS X3, (AX)
	ADDQ R10, AX
	VEXTRACTF128 $1, Y0, (AX)
	ADDQ R10, AX
	VEXTRACTF128 $1, Y1, (AX)
	ADDQ R10, AX
	VEXTRACTF128 $1, Y2, (AX)
	ADDQ R10, AX
	VEXTRACTF128 $1, Y3, (AX)
	ADDQ $32, SI
	ADDQ $32, R9
	ADDQ R11, DI
	SUBQ $8, CX
	JGT  loop

	VZEROUPPER
	RET

// func packTranspose2AVX(dst *float32, ldd int, src *float32, lds int, n int)
//
// packTranspose4AVX for two rows: the values of column p of rows 0 and 1
// go to dst[p·ldd : p·ldd+2]. n must be a positive multiple of 8. The AVX2
// kernel's A slivers are six rows, four of them packed by
// packTranspose4AVX; the scalar loop that took the other two one value
// at a time was 10 % of a 1024³ product (sgemm.go's packTransposed).
TEXT ·packTranspose2AVX(SB), NOSPLIT, $0-40
	TRANSPOSEARGS

loop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R8*1), Y1
	// Per 128-bit lane: Y2 = r0c0 r1c0 r0c1 r1c1, Y3 = r0c2 r1c2 r0c3 r1c3
	// (columns 4..7 in the high lane); each column's pair is 8 bytes.
	VUNPCKLPS    Y1, Y0, Y2
	VUNPCKHPS    Y1, Y0, Y3
	VEXTRACTF128 $1, Y2, X4
	VEXTRACTF128 $1, Y3, X5
	MOVQ         DI, AX
	VMOVLPS      X2, (AX)
	ADDQ         R10, AX
	VMOVHPS      X2, (AX)
	ADDQ         R10, AX
	VMOVLPS      X3, (AX)
	ADDQ         R10, AX
	VMOVHPS      X3, (AX)
	ADDQ         R10, AX
	VMOVLPS      X4, (AX)
	ADDQ         R10, AX
	VMOVHPS      X4, (AX)
	ADDQ         R10, AX
	VMOVLPS      X5, (AX)
	ADDQ         R10, AX
	VMOVHPS      X5, (AX)
	ADDQ         $32, SI
	ADDQ         R11, DI
	SUBQ         $8, CX
	JGT          loop

	VZEROUPPER
	RET

// func packRowsAVX512(dst *float32, ldd int, src *float32, lds int, n int, masks *[4]uint16)
//
// Copies n rows of up to 32 float32 values (row p at src + p·lds) to
// dst + p·ldd, through masked AVX-512 moves: masks[0] and masks[1] select
// the values read from each row's two 16-lane halves (the others load as
// zero, and masked-off lanes never fault), masks[2] and masks[3] the lanes
// written. So a ragged sliver is copied and zero-padded in one pass, with
// no call per row. Each iteration prefetches the row eight ahead: the rows
// are a row stride apart, where the hardware prefetcher does not follow.
TEXT ·packRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R10
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R8
	MOVQ n+32(FP), CX
	MOVQ masks+40(FP), AX
	SHLQ $2, R10
	SHLQ $2, R8
	KMOVW 0(AX), K1
	KMOVW 2(AX), K2
	KMOVW 4(AX), K3
	KMOVW 6(AX), K4
	MOVQ R8, R9
	SHLQ $3, R9             // eight rows ahead

rows:
	PREFETCHT0 (SI)(R9*1)
	PREFETCHT0 64(SI)(R9*1)
	PREFETCHT0 127(SI)(R9*1)
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z 64(SI), K2, Z1
	VMOVUPS Z0, K3, (DI)
	VMOVUPS Z1, K4, 64(DI)
	ADDQ R8, SI
	ADDQ R10, DI
	DECQ CX
	JNZ  rows

	VZEROUPPER
	RET

// func packRows16AVX(dst *float32, src *float32, lds int, n int)
//
// Copies 16 float32 values of each of n rows (row p at src + p·lds) to
// dst[p·16 : p·16+16]: the AVX2 kernel's whole B slivers, two loads and
// two stores a row where copy called memmove for each (8 % of lesson
// 07's GPT step). n ≥ 1.
TEXT ·packRows16AVX(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	MOVQ n+24(FP), CX
	SHLQ $2, R8             // bytes between two rows of src

rows16:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    R8, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     rows16
	VZEROUPPER
	RET
