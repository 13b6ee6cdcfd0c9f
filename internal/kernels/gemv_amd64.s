#include "textflag.h"
#include "fold_amd64.h"

// The GEMV dot products of gemv.go: out[r] = the lane-ordered dot product of
// x with row r of w (rows ldw floats apart) over k16 elements, k16 a
// multiple of 16. Element p goes to lane p%16 (a ZMM register, or a pair of
// YMM registers, per row), each step a product rounded to float32 and then
// a sum (no FMA: the generic Go loop rounds twice too), and the lanes fold
// as gemvFold does: l + l+8, l + l+4, l + l+2, l + l+1. Rows go several
// at a time (the AVX-512 kernel eight, the AVX2 one four), then one at a
// time.

// GEMV_ARGS loads k16 into CX (in bytes), x into SI, w into DI, the row
// stride in bytes into R8 (3 rows in R10), rows into R9 and out into DX.
#define GEMV_ARGS \
	MOVQ k16+0(FP), CX \
	SHLQ $2, CX \
	MOVQ x+8(FP), SI \
	MOVQ w+16(FP), DI \
	MOVQ ldw+24(FP), R8 \
	SHLQ $2, R8 \
	LEAQ (R8)(R8*2), R10 \
	MOVQ rows+32(FP), R9 \
	MOVQ out+40(FP), DX

// func gemvDotsAVX512(k16 int, x, w *float32, ldw, rows int, out *float32)
//
// Eight rows at a time (eight streams from memory per core read faster than
// four: 25.4 against 23.3 GB/s over GPT-2 small's weights), then four,
// then one. Rows 4-7 are at R14, R15, BX and R10 (3 rows, recomputed).
TEXT ·gemvDotsAVX512(SB), NOSPLIT, $0-48
	GEMV_ARGS

eight512:
	CMPQ   R9, $8
	JLT    four512
	LEAQ   (DI)(R8*1), R11
	LEAQ   (DI)(R8*2), R12
	LEAQ   (DI)(R10*1), R13
	LEAQ   (DI)(R8*4), R14
	LEAQ   (R14)(R8*1), R15
	LEAQ   (R14)(R8*2), BX
	ADDQ   R14, R10
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	XORQ   AX, AX

loop8x512:
	CMPQ    AX, CX
	JGE     fold8x512
	VMOVUPS (SI)(AX*1), Z4
	VMULPS  (DI)(AX*1), Z4, Z5
	VADDPS  Z5, Z0, Z0
	VMULPS  (R11)(AX*1), Z4, Z6
	VADDPS  Z6, Z1, Z1
	VMULPS  (R12)(AX*1), Z4, Z7
	VADDPS  Z7, Z2, Z2
	VMULPS  (R13)(AX*1), Z4, Z8
	VADDPS  Z8, Z3, Z3
	VMULPS  (R14)(AX*1), Z4, Z5
	VADDPS  Z5, Z10, Z10
	VMULPS  (R15)(AX*1), Z4, Z6
	VADDPS  Z6, Z11, Z11
	VMULPS  (BX)(AX*1), Z4, Z7
	VADDPS  Z7, Z12, Z12
	VMULPS  (R10)(AX*1), Z4, Z8
	VADDPS  Z8, Z13, Z13
	ADDQ    $64, AX
	JMP     loop8x512

fold8x512:
	FOLD16(Z0, Y0, X0, Y9, X9)
	FOLD16(Z1, Y1, X1, Y9, X9)
	FOLD16(Z2, Y2, X2, Y9, X9)
	FOLD16(Z3, Y3, X3, Y9, X9)
	FOLD16(Z10, Y10, X10, Y9, X9)
	FOLD16(Z11, Y11, X11, Y9, X9)
	FOLD16(Z12, Y12, X12, Y9, X9)
	FOLD16(Z13, Y13, X13, Y9, X9)
	VMOVSS X0, (DX)
	VMOVSS X1, 4(DX)
	VMOVSS X2, 8(DX)
	VMOVSS X3, 12(DX)
	VMOVSS X10, 16(DX)
	VMOVSS X11, 20(DX)
	VMOVSS X12, 24(DX)
	VMOVSS X13, 28(DX)
	LEAQ   (DI)(R8*8), DI
	LEAQ   (R8)(R8*2), R10
	ADDQ   $32, DX
	SUBQ   $8, R9
	JMP    eight512

four512:
	CMPQ   R9, $4
	JLT    one512
	LEAQ   (DI)(R8*1), R11
	LEAQ   (DI)(R8*2), R12
	LEAQ   (DI)(R10*1), R13
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	XORQ   AX, AX

loop4x512:
	CMPQ    AX, CX
	JGE     fold4x512
	VMOVUPS (SI)(AX*1), Z4
	VMULPS  (DI)(AX*1), Z4, Z5
	VADDPS  Z5, Z0, Z0
	VMULPS  (R11)(AX*1), Z4, Z6
	VADDPS  Z6, Z1, Z1
	VMULPS  (R12)(AX*1), Z4, Z7
	VADDPS  Z7, Z2, Z2
	VMULPS  (R13)(AX*1), Z4, Z8
	VADDPS  Z8, Z3, Z3
	ADDQ    $64, AX
	JMP     loop4x512

fold4x512:
	FOLD16(Z0, Y0, X0, Y9, X9)
	FOLD16(Z1, Y1, X1, Y9, X9)
	FOLD16(Z2, Y2, X2, Y9, X9)
	FOLD16(Z3, Y3, X3, Y9, X9)
	VMOVSS X0, (DX)
	VMOVSS X1, 4(DX)
	VMOVSS X2, 8(DX)
	VMOVSS X3, 12(DX)
	LEAQ   (DI)(R8*4), DI
	ADDQ   $16, DX
	SUBQ   $4, R9
	JMP    four512

one512:
	TESTQ  R9, R9
	JE     done512
	VPXORD Z0, Z0, Z0
	XORQ   AX, AX

loop1x512:
	CMPQ    AX, CX
	JGE     fold1x512
	VMOVUPS (SI)(AX*1), Z4
	VMULPS  (DI)(AX*1), Z4, Z5
	VADDPS  Z5, Z0, Z0
	ADDQ    $64, AX
	JMP     loop1x512

fold1x512:
	FOLD16(Z0, Y0, X0, Y9, X9)
	VMOVSS X0, (DX)
	ADDQ   R8, DI
	ADDQ   $4, DX
	DECQ   R9
	JMP    one512

done512:
	VZEROUPPER
	RET

// func gemvDotsAVX2(k16 int, x, w *float32, ldw, rows int, out *float32)
//
// Row r's lanes 0-7 in Y(2r), lanes 8-15 in Y(2r+1).
TEXT ·gemvDotsAVX2(SB), NOSPLIT, $0-48
	GEMV_ARGS

four256:
	CMPQ   R9, $4
	JLT    one256
	LEAQ   (DI)(R8*1), R11
	LEAQ   (DI)(R8*2), R12
	LEAQ   (DI)(R10*1), R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   AX, AX

loop4x256:
	CMPQ    AX, CX
	JGE     fold4x256
	VMOVUPS (SI)(AX*1), Y8
	VMOVUPS 32(SI)(AX*1), Y9
	VMULPS  (DI)(AX*1), Y8, Y10
	VADDPS  Y10, Y0, Y0
	VMULPS  32(DI)(AX*1), Y9, Y11
	VADDPS  Y11, Y1, Y1
	VMULPS  (R11)(AX*1), Y8, Y12
	VADDPS  Y12, Y2, Y2
	VMULPS  32(R11)(AX*1), Y9, Y13
	VADDPS  Y13, Y3, Y3
	VMULPS  (R12)(AX*1), Y8, Y10
	VADDPS  Y10, Y4, Y4
	VMULPS  32(R12)(AX*1), Y9, Y11
	VADDPS  Y11, Y5, Y5
	VMULPS  (R13)(AX*1), Y8, Y12
	VADDPS  Y12, Y6, Y6
	VMULPS  32(R13)(AX*1), Y9, Y13
	VADDPS  Y13, Y7, Y7
	ADDQ    $64, AX
	JMP     loop4x256

fold4x256:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y5, Y4, Y4
	VADDPS Y7, Y6, Y6
	FOLD8(Y0, X0, Y9, X9)
	FOLD8(Y2, X2, Y9, X9)
	FOLD8(Y4, X4, Y9, X9)
	FOLD8(Y6, X6, Y9, X9)
	VMOVSS X0, (DX)
	VMOVSS X2, 4(DX)
	VMOVSS X4, 8(DX)
	VMOVSS X6, 12(DX)
	LEAQ   (DI)(R8*4), DI
	ADDQ   $16, DX
	SUBQ   $4, R9
	JMP    four256

one256:
	TESTQ  R9, R9
	JE     done256
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   AX, AX

loop1x256:
	CMPQ    AX, CX
	JGE     fold1x256
	VMOVUPS (SI)(AX*1), Y8
	VMOVUPS 32(SI)(AX*1), Y9
	VMULPS  (DI)(AX*1), Y8, Y10
	VADDPS  Y10, Y0, Y0
	VMULPS  32(DI)(AX*1), Y9, Y11
	VADDPS  Y11, Y1, Y1
	ADDQ    $64, AX
	JMP     loop1x256

fold1x256:
	VADDPS Y1, Y0, Y0
	FOLD8(Y0, X0, Y9, X9)
	VMOVSS X0, (DX)
	ADDQ   R8, DI
	ADDQ   $4, DX
	DECQ   R9
	JMP    one256

done256:
	VZEROUPPER
	RET

// func sumLanesAVX512(k16 int, x *float32) float32
//
// The folded lane sums of x[0:k16], in the GEMV's order (no products).
TEXT ·sumLanesAVX512(SB), NOSPLIT, $0-20
	MOVQ   k16+0(FP), CX
	SHLQ   $2, CX
	MOVQ   x+8(FP), SI
	VPXORD Z0, Z0, Z0
	XORQ   AX, AX

sumloop512:
	CMPQ   AX, CX
	JGE    sumfold512
	VADDPS (SI)(AX*1), Z0, Z0
	ADDQ   $64, AX
	JMP    sumloop512

sumfold512:
	FOLD16(Z0, Y0, X0, Y9, X9)
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func sumLanesAVX2(k16 int, x *float32) float32
TEXT ·sumLanesAVX2(SB), NOSPLIT, $0-20
	MOVQ   k16+0(FP), CX
	SHLQ   $2, CX
	MOVQ   x+8(FP), SI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   AX, AX

sumloop256:
	CMPQ   AX, CX
	JGE    sumfold256
	VADDPS (SI)(AX*1), Y0, Y0
	VADDPS 32(SI)(AX*1), Y1, Y1
	ADDQ   $64, AX
	JMP    sumloop256

sumfold256:
	VADDPS Y1, Y0, Y0
	FOLD8(Y0, X0, Y9, X9)
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET
