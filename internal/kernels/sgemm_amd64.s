#include "textflag.h"

// A_PANEL loads kc into CX, the A panel's address into SI, its row stride
// rs in bytes into R9 with 3 and 5 times it in R10 and R11 (rows 0-5 are at
// (SI), (SI)(R9*1), (SI)(R9*2), (SI)(R10*1), (SI)(R9*4), (SI)(R11*1)), and
// its step stride ps in bytes into R12: the arguments every kernel below
// takes first.
#define A_PANEL \
	MOVQ kc+0(FP), CX \
	MOVQ a+8(FP), SI \
	MOVQ rs+16(FP), R9 \
	SHLQ $2, R9 \
	LEAQ (R9)(R9*2), R10 \
	LEAQ (R9)(R9*4), R11 \
	MOVQ ps+24(FP), R12 \
	SHLQ $2, R12

// ZERO_Z0_Z11 clears the accumulators Z0-Z11.
#define ZERO_Z0_Z11 \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11

// The tiles' epilogues write C a row at a time from DX, then move DX down
// a row (R8 is ldc in bytes; after the last row the move is unused). ADD_ROW2 adds C's row to the accumulators lo
// (its first columns) and hi (the columns w bytes on) and stores them there;
// PUT_ROW2 stores them over it. ADD_ROW and PUT_ROW do the same for a row in
// one register, ADD_ROW_MASKED and PUT_ROW_MASKED for the columns set in K1
// (C read through Z12).
#define ADD_ROW2(lo, hi, w) \
	VADDPS  (DX), lo, lo \
	VADDPS  w(DX), hi, hi \
	VMOVUPS lo, (DX) \
	VMOVUPS hi, w(DX) \
	ADDQ    R8, DX

#define PUT_ROW2(lo, hi, w) \
	VMOVUPS lo, (DX) \
	VMOVUPS hi, w(DX) \
	ADDQ    R8, DX

#define ADD_ROW(r) \
	VADDPS  (DX), r, r \
	VMOVUPS r, (DX) \
	ADDQ    R8, DX

#define PUT_ROW(r) \
	VMOVUPS r, (DX) \
	ADDQ    R8, DX

#define ADD_ROW_MASKED(r) \
	VMOVUPS.Z (DX), K1, Z12 \
	VADDPS    Z12, r, r \
	VMOVUPS   r, K1, (DX) \
	ADDQ      R8, DX

#define PUT_ROW_MASKED(r) \
	VMOVUPS r, K1, (DX) \
	ADDQ    R8, DX

// func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eaxArg+0(FP), AX
	MOVL ecxArg+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func xgetbv() (eax, edx uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	MOVL DX, edx+4(FP)
	RET

// func sgemmKernel6x16(kc int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, add int)
//
// C[0:6][0:16] (+)= A B over kc steps, where element (r, p) of the 6-row A
// panel is at a[r*rs + p*ps] (rs, ps in elements: a packed panel has rs 1,
// ps 6; a row-major A read in place has rs lda, ps 1) and step p of the
// 16-column B panel is the 16 values at b[p*bs] (bs 16 when packed, ldb when
// a row-major B is read in place). The tile is accumulated in Y0-Y11 (row r
// in Y(2r), Y(2r+1)); add != 0 adds it to C, else stores it.
TEXT ·sgemmKernel6x16(SB), NOSPLIT, $0-72
	A_PANEL
	MOVQ b+32(FP), DI
	MOVQ bs+40(FP), R13
	SHLQ $2, R13
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R8
	SHLQ $2, R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	TESTQ CX, CX
	JE    store

loop:
	VMOVUPS      (DI), Y12
	VMOVUPS      32(DI), Y13
	VBROADCASTSS (SI), Y14
	VFMADD231PS  Y12, Y14, Y0
	VFMADD231PS  Y13, Y14, Y1
	VBROADCASTSS (SI)(R9*1), Y15
	VFMADD231PS  Y12, Y15, Y2
	VFMADD231PS  Y13, Y15, Y3
	VBROADCASTSS (SI)(R9*2), Y14
	VFMADD231PS  Y12, Y14, Y4
	VFMADD231PS  Y13, Y14, Y5
	VBROADCASTSS (SI)(R10*1), Y15
	VFMADD231PS  Y12, Y15, Y6
	VFMADD231PS  Y13, Y15, Y7
	VBROADCASTSS (SI)(R9*4), Y14
	VFMADD231PS  Y12, Y14, Y8
	VFMADD231PS  Y13, Y14, Y9
	VBROADCASTSS (SI)(R11*1), Y15
	VFMADD231PS  Y12, Y15, Y10
	VFMADD231PS  Y13, Y15, Y11
	ADDQ         R12, SI
	ADDQ         R13, DI
	DECQ         CX
	JNE          loop

store:
	MOVQ add+64(FP), AX
	TESTQ AX, AX
	JE    overwrite
	ADD_ROW2(Y0, Y1, 32)
	ADD_ROW2(Y2, Y3, 32)
	ADD_ROW2(Y4, Y5, 32)
	ADD_ROW2(Y6, Y7, 32)
	ADD_ROW2(Y8, Y9, 32)
	ADD_ROW2(Y10, Y11, 32)
	VZEROUPPER
	RET

overwrite:
	PUT_ROW2(Y0, Y1, 32)
	PUT_ROW2(Y2, Y3, 32)
	PUT_ROW2(Y4, Y5, 32)
	PUT_ROW2(Y6, Y7, 32)
	PUT_ROW2(Y8, Y9, 32)
	PUT_ROW2(Y10, Y11, 32)
	VZEROUPPER
	RET

// func sgemmKernel6x32(kc int, a *float32, rs, ps int, b0, b1 *float32, bs int, c *float32, ldc int, add int)
//
// The AVX-512 version of sgemmKernel6x16 for a 6x32 tile: columns 0-15 of
// step p are the 16 values at b0[p*bs], columns 16-31 those at b1[p*bs];
// full tiles only (C is read and written 32 wide). Accumulates row r in
// Z(2r), Z(2r+1).
TEXT ·sgemmKernel6x32(SB), NOSPLIT, $0-80
	A_PANEL
	MOVQ b0+32(FP), DI
	MOVQ b1+40(FP), BX
	MOVQ bs+48(FP), R13
	SHLQ $2, R13
	MOVQ c+56(FP), DX
	MOVQ ldc+64(FP), R8
	SHLQ $2, R8
	ZERO_Z0_Z11
	TESTQ CX, CX
	JE    store32

loop32:
	VMOVUPS      (DI), Z12
	VMOVUPS      (BX), Z13
	VBROADCASTSS (SI), Z14
	VFMADD231PS  Z12, Z14, Z0
	VFMADD231PS  Z13, Z14, Z1
	VBROADCASTSS (SI)(R9*1), Z15
	VFMADD231PS  Z12, Z15, Z2
	VFMADD231PS  Z13, Z15, Z3
	VBROADCASTSS (SI)(R9*2), Z14
	VFMADD231PS  Z12, Z14, Z4
	VFMADD231PS  Z13, Z14, Z5
	VBROADCASTSS (SI)(R10*1), Z15
	VFMADD231PS  Z12, Z15, Z6
	VFMADD231PS  Z13, Z15, Z7
	VBROADCASTSS (SI)(R9*4), Z14
	VFMADD231PS  Z12, Z14, Z8
	VFMADD231PS  Z13, Z14, Z9
	VBROADCASTSS (SI)(R11*1), Z15
	VFMADD231PS  Z12, Z15, Z10
	VFMADD231PS  Z13, Z15, Z11
	ADDQ         R12, SI
	ADDQ         R13, DI
	ADDQ         R13, BX
	DECQ         CX
	JNE          loop32

store32:
	MOVQ  add+72(FP), AX
	TESTQ AX, AX
	JE    overwrite32
	ADD_ROW2(Z0, Z1, 64)
	ADD_ROW2(Z2, Z3, 64)
	ADD_ROW2(Z4, Z5, 64)
	ADD_ROW2(Z6, Z7, 64)
	ADD_ROW2(Z8, Z9, 64)
	ADD_ROW2(Z10, Z11, 64)
	VZEROUPPER
	RET

overwrite32:
	PUT_ROW2(Z0, Z1, 64)
	PUT_ROW2(Z2, Z3, 64)
	PUT_ROW2(Z4, Z5, 64)
	PUT_ROW2(Z6, Z7, 64)
	PUT_ROW2(Z8, Z9, 64)
	PUT_ROW2(Z10, Z11, 64)
	VZEROUPPER
	RET

// func sgemmKernel6x16Masked(kc int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, add int, mask uint16)
//
// sgemmKernel6x16 for a tile narrower than 16 columns, with AVX-512 masks:
// only the columns whose bit is set in mask are read from B and read and
// written in C, so B can be read in place and C written directly, without
// a packed copy or a local tile. Row r accumulates in Z(r).
TEXT ·sgemmKernel6x16Masked(SB), NOSPLIT, $0-74
	A_PANEL
	MOVQ  b+32(FP), DI
	MOVQ  bs+40(FP), R13
	SHLQ  $2, R13
	MOVQ  c+48(FP), DX
	MOVQ  ldc+56(FP), R8
	SHLQ  $2, R8
	MOVWLZX mask+72(FP), AX
	KMOVW AX, K1
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	TESTQ CX, CX
	JE    storem

loopm:
	VMOVUPS.Z    (DI), K1, Z12
	VBROADCASTSS (SI), Z14
	VFMADD231PS  Z12, Z14, Z0
	VBROADCASTSS (SI)(R9*1), Z15
	VFMADD231PS  Z12, Z15, Z1
	VBROADCASTSS (SI)(R9*2), Z14
	VFMADD231PS  Z12, Z14, Z2
	VBROADCASTSS (SI)(R10*1), Z15
	VFMADD231PS  Z12, Z15, Z3
	VBROADCASTSS (SI)(R9*4), Z14
	VFMADD231PS  Z12, Z14, Z4
	VBROADCASTSS (SI)(R11*1), Z15
	VFMADD231PS  Z12, Z15, Z5
	ADDQ         R12, SI
	ADDQ         R13, DI
	DECQ         CX
	JNE          loopm

storem:
	MOVQ  add+64(FP), AX
	TESTQ AX, AX
	JE    overwritem
	ADD_ROW_MASKED(Z0)
	ADD_ROW_MASKED(Z1)
	ADD_ROW_MASKED(Z2)
	ADD_ROW_MASKED(Z3)
	ADD_ROW_MASKED(Z4)
	ADD_ROW_MASKED(Z5)
	VZEROUPPER
	RET

overwritem:
	PUT_ROW_MASKED(Z0)
	PUT_ROW_MASKED(Z1)
	PUT_ROW_MASKED(Z2)
	PUT_ROW_MASKED(Z3)
	PUT_ROW_MASKED(Z4)
	PUT_ROW_MASKED(Z5)
	VZEROUPPER
	RET

// func sgemmKernel12x16(kc int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, add int)
//
// The AVX-512 kernel for 16-column tiles of two 6-row panels at once (12
// rows, strides as in sgemmKernel6x16, rows 6-11 at a + 6*rs): one ZMM
// accumulator per row, A broadcast straight from memory into each FMA.
// Full tiles only.
TEXT ·sgemmKernel12x16(SB), NOSPLIT, $0-72
	A_PANEL
	LEAQ (SI)(R10*2), R14
	MOVQ b+32(FP), DI
	MOVQ bs+40(FP), R13
	SHLQ $2, R13
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R8
	SHLQ $2, R8
	ZERO_Z0_Z11
	TESTQ CX, CX
	JE    store12

loop12:
	VMOVUPS (DI), Z12
	VFMADD231PS.BCST (SI), Z12, Z0
	VFMADD231PS.BCST (SI)(R9*1), Z12, Z1
	VFMADD231PS.BCST (SI)(R9*2), Z12, Z2
	VFMADD231PS.BCST (SI)(R10*1), Z12, Z3
	VFMADD231PS.BCST (SI)(R9*4), Z12, Z4
	VFMADD231PS.BCST (SI)(R11*1), Z12, Z5
	VFMADD231PS.BCST (R14), Z12, Z6
	VFMADD231PS.BCST (R14)(R9*1), Z12, Z7
	VFMADD231PS.BCST (R14)(R9*2), Z12, Z8
	VFMADD231PS.BCST (R14)(R10*1), Z12, Z9
	VFMADD231PS.BCST (R14)(R9*4), Z12, Z10
	VFMADD231PS.BCST (R14)(R11*1), Z12, Z11
	ADDQ R12, SI
	ADDQ R12, R14
	ADDQ R13, DI
	DECQ CX
	JNE  loop12

store12:
	MOVQ  add+64(FP), AX
	TESTQ AX, AX
	JE    overwrite12
	ADD_ROW(Z0)
	ADD_ROW(Z1)
	ADD_ROW(Z2)
	ADD_ROW(Z3)
	ADD_ROW(Z4)
	ADD_ROW(Z5)
	ADD_ROW(Z6)
	ADD_ROW(Z7)
	ADD_ROW(Z8)
	ADD_ROW(Z9)
	ADD_ROW(Z10)
	ADD_ROW(Z11)
	VZEROUPPER
	RET

overwrite12:
	PUT_ROW(Z0)
	PUT_ROW(Z1)
	PUT_ROW(Z2)
	PUT_ROW(Z3)
	PUT_ROW(Z4)
	PUT_ROW(Z5)
	PUT_ROW(Z6)
	PUT_ROW(Z7)
	PUT_ROW(Z8)
	PUT_ROW(Z9)
	PUT_ROW(Z10)
	PUT_ROW(Z11)
	VZEROUPPER
	RET

// func sgemmKernel12x32(kc int, a *float32, rs, ps int, b0, b1 *float32, bs int, c *float32, ldc int, add int)
//
// The AVX-512 kernel for 32-column tiles of two 6-row panels at once (rows
// 6-11 at a + 6*rs; B as in sgemmKernel6x32): 24 ZMM accumulators, so each
// B vector loaded serves twelve rows. Full tiles only.
TEXT ·sgemmKernel12x32(SB), NOSPLIT, $0-80
	A_PANEL
	LEAQ (SI)(R10*2), R14
	MOVQ b0+32(FP), DI
	MOVQ b1+40(FP), BX
	MOVQ bs+48(FP), R13
	SHLQ $2, R13
	MOVQ c+56(FP), DX
	MOVQ ldc+64(FP), R8
	SHLQ $2, R8
	ZERO_Z0_Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	TESTQ CX, CX
	JE    store1232

loop1232:
	VMOVUPS (DI), Z24
	VMOVUPS (BX), Z25
	VBROADCASTSS (SI), Z26
	VFMADD231PS  Z24, Z26, Z0
	VFMADD231PS  Z25, Z26, Z1
	VBROADCASTSS (SI)(R9*1), Z27
	VFMADD231PS  Z24, Z27, Z2
	VFMADD231PS  Z25, Z27, Z3
	VBROADCASTSS (SI)(R9*2), Z26
	VFMADD231PS  Z24, Z26, Z4
	VFMADD231PS  Z25, Z26, Z5
	VBROADCASTSS (SI)(R10*1), Z27
	VFMADD231PS  Z24, Z27, Z6
	VFMADD231PS  Z25, Z27, Z7
	VBROADCASTSS (SI)(R9*4), Z26
	VFMADD231PS  Z24, Z26, Z8
	VFMADD231PS  Z25, Z26, Z9
	VBROADCASTSS (SI)(R11*1), Z27
	VFMADD231PS  Z24, Z27, Z10
	VFMADD231PS  Z25, Z27, Z11
	VBROADCASTSS (R14), Z26
	VFMADD231PS  Z24, Z26, Z12
	VFMADD231PS  Z25, Z26, Z13
	VBROADCASTSS (R14)(R9*1), Z27
	VFMADD231PS  Z24, Z27, Z14
	VFMADD231PS  Z25, Z27, Z15
	VBROADCASTSS (R14)(R9*2), Z26
	VFMADD231PS  Z24, Z26, Z16
	VFMADD231PS  Z25, Z26, Z17
	VBROADCASTSS (R14)(R10*1), Z27
	VFMADD231PS  Z24, Z27, Z18
	VFMADD231PS  Z25, Z27, Z19
	VBROADCASTSS (R14)(R9*4), Z26
	VFMADD231PS  Z24, Z26, Z20
	VFMADD231PS  Z25, Z26, Z21
	VBROADCASTSS (R14)(R11*1), Z27
	VFMADD231PS  Z24, Z27, Z22
	VFMADD231PS  Z25, Z27, Z23
	ADDQ R12, SI
	ADDQ R12, R14
	ADDQ R13, DI
	ADDQ R13, BX
	DECQ CX
	JNE  loop1232

store1232:
	MOVQ  add+72(FP), AX
	TESTQ AX, AX
	JE    overwrite1232
	ADD_ROW2(Z0, Z1, 64)
	ADD_ROW2(Z2, Z3, 64)
	ADD_ROW2(Z4, Z5, 64)
	ADD_ROW2(Z6, Z7, 64)
	ADD_ROW2(Z8, Z9, 64)
	ADD_ROW2(Z10, Z11, 64)
	ADD_ROW2(Z12, Z13, 64)
	ADD_ROW2(Z14, Z15, 64)
	ADD_ROW2(Z16, Z17, 64)
	ADD_ROW2(Z18, Z19, 64)
	ADD_ROW2(Z20, Z21, 64)
	ADD_ROW2(Z22, Z23, 64)
	VZEROUPPER
	RET

overwrite1232:
	PUT_ROW2(Z0, Z1, 64)
	PUT_ROW2(Z2, Z3, 64)
	PUT_ROW2(Z4, Z5, 64)
	PUT_ROW2(Z6, Z7, 64)
	PUT_ROW2(Z8, Z9, 64)
	PUT_ROW2(Z10, Z11, 64)
	PUT_ROW2(Z12, Z13, 64)
	PUT_ROW2(Z14, Z15, 64)
	PUT_ROW2(Z16, Z17, 64)
	PUT_ROW2(Z18, Z19, 64)
	PUT_ROW2(Z20, Z21, 64)
	PUT_ROW2(Z22, Z23, 64)
	VZEROUPPER
	RET

// TRANSPOSE8 transposes the 8x8 block whose row r is in Y(r), r < 8: column
// c ends in Y(8+c). Y0-Y7 are overwritten.
#define TRANSPOSE8 \
	VUNPCKLPS  Y1, Y0, Y8 \
	VUNPCKHPS  Y1, Y0, Y9 \
	VUNPCKLPS  Y3, Y2, Y10 \
	VUNPCKHPS  Y3, Y2, Y11 \
	VUNPCKLPS  Y5, Y4, Y12 \
	VUNPCKHPS  Y5, Y4, Y13 \
	VUNPCKLPS  Y7, Y6, Y14 \
	VUNPCKHPS  Y7, Y6, Y15 \
	VSHUFPS    $0x44, Y10, Y8, Y0 \
	VSHUFPS    $0xEE, Y10, Y8, Y1 \
	VSHUFPS    $0x44, Y11, Y9, Y2 \
	VSHUFPS    $0xEE, Y11, Y9, Y3 \
	VSHUFPS    $0x44, Y14, Y12, Y4 \
	VSHUFPS    $0xEE, Y14, Y12, Y5 \
	VSHUFPS    $0x44, Y15, Y13, Y6 \
	VSHUFPS    $0xEE, Y15, Y13, Y7 \
	VPERM2F128 $0x20, Y4, Y0, Y8 \
	VPERM2F128 $0x20, Y5, Y1, Y9 \
	VPERM2F128 $0x20, Y6, Y2, Y10 \
	VPERM2F128 $0x20, Y7, Y3, Y11 \
	VPERM2F128 $0x31, Y4, Y0, Y12 \
	VPERM2F128 $0x31, Y5, Y1, Y13 \
	VPERM2F128 $0x31, Y6, Y2, Y14 \
	VPERM2F128 $0x31, Y7, Y3, Y15

// LOAD8(base) loads 8 values of each of 8 rows from base (rows R8 bytes
// apart; R9, R10 and R11 are 3, 5 and 7 rows) into Y0-Y7.
#define LOAD8(base) \
	VMOVUPS (base), Y0 \
	VMOVUPS (base)(R8*1), Y1 \
	VMOVUPS (base)(R8*2), Y2 \
	VMOVUPS (base)(R9*1), Y3 \
	VMOVUPS (base)(R8*4), Y4 \
	VMOVUPS (base)(R10*1), Y5 \
	VMOVUPS (base)(R9*2), Y6 \
	VMOVUPS (base)(R11*1), Y7

// STORE8(off) stores the transposed columns Y8-Y15 as 8 steps of the
// panel at DX, each 64 bytes on, off bytes into each step.
#define STORE8(off) \
	VMOVUPS Y8, off(DX) \
	VMOVUPS Y9, 64+off(DX) \
	VMOVUPS Y10, 128+off(DX) \
	VMOVUPS Y11, 192+off(DX) \
	VMOVUPS Y12, 256+off(DX) \
	VMOVUPS Y13, 320+off(DX) \
	VMOVUPS Y14, 384+off(DX) \
	VMOVUPS Y15, 448+off(DX)

// func packTransposed16AVX2(kc8 int, b *float32, ldb int, panel *float32)
//
// Steps p < kc8 (a multiple of 8) of packTransposed16: panel[p*16 + j] =
// b[j*ldb + p] for the 16 rows j, an 8x8 block at a time.
TEXT ·packTransposed16AVX2(SB), NOSPLIT, $0-32
	MOVQ kc8+0(FP), CX
	MOVQ b+8(FP), SI
	MOVQ ldb+16(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	LEAQ (R8)(R8*4), R10
	LEAQ (R9)(R8*4), R11
	LEAQ (SI)(R8*8), DI
	MOVQ panel+24(FP), DX

packloop:
	TESTQ CX, CX
	JE    packdone
	LOAD8(SI)
	TRANSPOSE8
	STORE8(0)
	LOAD8(DI)
	TRANSPOSE8
	STORE8(32)
	ADDQ  $32, SI
	ADDQ  $32, DI
	ADDQ  $512, DX
	SUBQ  $8, CX
	JMP   packloop

packdone:
	VZEROUPPER
	RET
