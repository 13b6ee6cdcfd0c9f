#include "textflag.h"

// func addScaledRowsAVX512(n int, y, x *float32, rows int, a *float32, lda int)
//
// AddScaledRows' kernel: y[j] += x[p] * a[p*lda+j] for p = 0..rows-1 in
// order, a product rounded and then a sum (no FMA), sixty-four lanes of y
// at a time in four registers, then sixteen, then the last under a mask.
TEXT ·addScaledRowsAVX512(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ y+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ rows+24(FP), R9
	MOVQ a+32(FP), DI
	MOVQ lda+40(FP), R8
	SHLQ $2, R8

block64:
	CMPQ    CX, $64
	JLT     block16
	VMOVUPS (DX), Z0
	VMOVUPS 64(DX), Z1
	VMOVUPS 128(DX), Z2
	VMOVUPS 192(DX), Z3
	MOVQ    DI, R10
	XORQ    AX, AX

loop64:
	CMPQ         AX, R9
	JGE          store64
	VBROADCASTSS (SI)(AX*4), Z4
	VMULPS       (R10), Z4, Z5
	VADDPS       Z5, Z0, Z0
	VMULPS       64(R10), Z4, Z6
	VADDPS       Z6, Z1, Z1
	VMULPS       128(R10), Z4, Z7
	VADDPS       Z7, Z2, Z2
	VMULPS       192(R10), Z4, Z8
	VADDPS       Z8, Z3, Z3
	ADDQ         R8, R10
	INCQ         AX
	JMP          loop64

store64:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, 128(DX)
	VMOVUPS Z3, 192(DX)
	ADDQ    $256, DX
	ADDQ    $256, DI
	SUBQ    $64, CX
	JMP     block64

block16:
	CMPQ    CX, $16
	JLT     tail
	VMOVUPS (DX), Z0
	MOVQ    DI, R10
	XORQ    AX, AX

loop16:
	CMPQ         AX, R9
	JGE          store16
	VBROADCASTSS (SI)(AX*4), Z4
	VMULPS       (R10), Z4, Z5
	VADDPS       Z5, Z0, Z0
	ADDQ         R8, R10
	INCQ         AX
	JMP          loop16

store16:
	VMOVUPS Z0, (DX)
	ADDQ    $64, DX
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     block16

tail:
	TESTQ     CX, CX
	JZ        done
	MOVQ      $1, BX
	SHLQ      CX, BX
	DECQ      BX
	KMOVW     BX, K1            // the CX lanes left
	VMOVUPS.Z (DX), K1, Z0
	MOVQ      DI, R10
	XORQ      AX, AX

looptail:
	CMPQ         AX, R9
	JGE          storetail
	VBROADCASTSS (SI)(AX*4), Z4
	VMULPS.Z     (R10), Z4, K1, Z5 // masked: no lane past the row is read
	VADDPS       Z5, Z0, Z0
	ADDQ         R8, R10
	INCQ         AX
	JMP          looptail

storetail:
	VMOVUPS Z0, K1, (DX)

done:
	VZEROUPPER
	RET
