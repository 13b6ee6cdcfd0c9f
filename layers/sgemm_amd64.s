#include "textflag.h"

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
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rs+16(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	LEAQ (R9)(R9*4), R11
	MOVQ ps+24(FP), R12
	SHLQ $2, R12
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
	VADDPS  (DX), Y0, Y0
	VADDPS  32(DX), Y1, Y1
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Y2, Y2
	VADDPS  32(DX), Y3, Y3
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Y4, Y4
	VADDPS  32(DX), Y5, Y5
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Y6, Y6
	VADDPS  32(DX), Y7, Y7
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Y8, Y8
	VADDPS  32(DX), Y9, Y9
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, 32(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Y10, Y10
	VADDPS  32(DX), Y11, Y11
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	VZEROUPPER
	RET

overwrite:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ    R8, DX
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ    R8, DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ    R8, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	ADDQ    R8, DX
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, 32(DX)
	ADDQ    R8, DX
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	VZEROUPPER
	RET

// func sgemmKernel6x32(kc int, a *float32, rs, ps int, b0, b1 *float32, bs int, c *float32, ldc int, add int)
//
// The AVX-512 version of sgemmKernel6x16 for a 6x32 tile: columns 0-15 of
// step p are the 16 values at b0[p*bs], columns 16-31 those at b1[p*bs];
// full tiles only (C is read and written 32 wide). Accumulates row r in
// Z(2r), Z(2r+1).
TEXT ·sgemmKernel6x32(SB), NOSPLIT, $0-80
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rs+16(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	LEAQ (R9)(R9*4), R11
	MOVQ ps+24(FP), R12
	SHLQ $2, R12
	MOVQ b0+32(FP), DI
	MOVQ b1+40(FP), BX
	MOVQ bs+48(FP), R13
	SHLQ $2, R13
	MOVQ c+56(FP), DX
	MOVQ ldc+64(FP), R8
	SHLQ $2, R8
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
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
	VADDPS  (DX), Z0, Z0
	VADDPS  64(DX), Z1, Z1
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z2, Z2
	VADDPS  64(DX), Z3, Z3
	VMOVUPS Z2, (DX)
	VMOVUPS Z3, 64(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z4, Z4
	VADDPS  64(DX), Z5, Z5
	VMOVUPS Z4, (DX)
	VMOVUPS Z5, 64(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z6, Z6
	VADDPS  64(DX), Z7, Z7
	VMOVUPS Z6, (DX)
	VMOVUPS Z7, 64(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z8, Z8
	VADDPS  64(DX), Z9, Z9
	VMOVUPS Z8, (DX)
	VMOVUPS Z9, 64(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z10, Z10
	VADDPS  64(DX), Z11, Z11
	VMOVUPS Z10, (DX)
	VMOVUPS Z11, 64(DX)
	VZEROUPPER
	RET

overwrite32:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	ADDQ    R8, DX
	VMOVUPS Z2, (DX)
	VMOVUPS Z3, 64(DX)
	ADDQ    R8, DX
	VMOVUPS Z4, (DX)
	VMOVUPS Z5, 64(DX)
	ADDQ    R8, DX
	VMOVUPS Z6, (DX)
	VMOVUPS Z7, 64(DX)
	ADDQ    R8, DX
	VMOVUPS Z8, (DX)
	VMOVUPS Z9, 64(DX)
	ADDQ    R8, DX
	VMOVUPS Z10, (DX)
	VMOVUPS Z11, 64(DX)
	VZEROUPPER
	RET

// func sgemmKernel6x16Masked(kc int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, add int, mask uint16)
//
// sgemmKernel6x16 for a tile narrower than 16 columns, with AVX-512 masks:
// only the columns whose bit is set in mask are read from B and read and
// written in C, so B can be read in place and C written directly, without
// a packed copy or a local tile. Row r accumulates in Z(r).
TEXT ·sgemmKernel6x16Masked(SB), NOSPLIT, $0-74
	MOVQ  kc+0(FP), CX
	MOVQ  a+8(FP), SI
	MOVQ  rs+16(FP), R9
	SHLQ  $2, R9
	LEAQ  (R9)(R9*2), R10
	LEAQ  (R9)(R9*4), R11
	MOVQ  ps+24(FP), R12
	SHLQ  $2, R12
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
	VMOVUPS.Z (DX), K1, Z12
	VADDPS    Z12, Z0, Z0
	VMOVUPS   Z0, K1, (DX)
	ADDQ      R8, DX
	VMOVUPS.Z (DX), K1, Z12
	VADDPS    Z12, Z1, Z1
	VMOVUPS   Z1, K1, (DX)
	ADDQ      R8, DX
	VMOVUPS.Z (DX), K1, Z12
	VADDPS    Z12, Z2, Z2
	VMOVUPS   Z2, K1, (DX)
	ADDQ      R8, DX
	VMOVUPS.Z (DX), K1, Z12
	VADDPS    Z12, Z3, Z3
	VMOVUPS   Z3, K1, (DX)
	ADDQ      R8, DX
	VMOVUPS.Z (DX), K1, Z12
	VADDPS    Z12, Z4, Z4
	VMOVUPS   Z4, K1, (DX)
	ADDQ      R8, DX
	VMOVUPS.Z (DX), K1, Z12
	VADDPS    Z12, Z5, Z5
	VMOVUPS   Z5, K1, (DX)
	VZEROUPPER
	RET

overwritem:
	VMOVUPS Z0, K1, (DX)
	ADDQ    R8, DX
	VMOVUPS Z1, K1, (DX)
	ADDQ    R8, DX
	VMOVUPS Z2, K1, (DX)
	ADDQ    R8, DX
	VMOVUPS Z3, K1, (DX)
	ADDQ    R8, DX
	VMOVUPS Z4, K1, (DX)
	ADDQ    R8, DX
	VMOVUPS Z5, K1, (DX)
	VZEROUPPER
	RET

// func sgemmKernel12x16(kc int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, add int)
//
// The AVX-512 kernel for 16-column tiles of two 6-row panels at once (12
// rows, strides as in sgemmKernel6x16, rows 6-11 at a + 6*rs): one ZMM
// accumulator per row, A broadcast straight from memory into each FMA.
// Full tiles only.
TEXT ·sgemmKernel12x16(SB), NOSPLIT, $0-72
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rs+16(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	LEAQ (R9)(R9*4), R11
	LEAQ (SI)(R10*2), R14
	MOVQ ps+24(FP), R12
	SHLQ $2, R12
	MOVQ b+32(FP), DI
	MOVQ bs+40(FP), R13
	SHLQ $2, R13
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R8
	SHLQ $2, R8
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
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
	VADDPS  (DX), Z0, Z0
	VMOVUPS Z0, (DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z1, Z1
	VMOVUPS Z1, (DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z2, Z2
	VMOVUPS Z2, (DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z3, Z3
	VMOVUPS Z3, (DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z4, Z4
	VMOVUPS Z4, (DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z5, Z5
	VMOVUPS Z5, (DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z6, Z6
	VMOVUPS Z6, (DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z7, Z7
	VMOVUPS Z7, (DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z8, Z8
	VMOVUPS Z8, (DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z9, Z9
	VMOVUPS Z9, (DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z10, Z10
	VMOVUPS Z10, (DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z11, Z11
	VMOVUPS Z11, (DX)
	VZEROUPPER
	RET

overwrite12:
	VMOVUPS Z0, (DX)
	ADDQ    R8, DX
	VMOVUPS Z1, (DX)
	ADDQ    R8, DX
	VMOVUPS Z2, (DX)
	ADDQ    R8, DX
	VMOVUPS Z3, (DX)
	ADDQ    R8, DX
	VMOVUPS Z4, (DX)
	ADDQ    R8, DX
	VMOVUPS Z5, (DX)
	ADDQ    R8, DX
	VMOVUPS Z6, (DX)
	ADDQ    R8, DX
	VMOVUPS Z7, (DX)
	ADDQ    R8, DX
	VMOVUPS Z8, (DX)
	ADDQ    R8, DX
	VMOVUPS Z9, (DX)
	ADDQ    R8, DX
	VMOVUPS Z10, (DX)
	ADDQ    R8, DX
	VMOVUPS Z11, (DX)
	VZEROUPPER
	RET
