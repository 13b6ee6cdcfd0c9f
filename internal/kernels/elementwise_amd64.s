#include "textflag.h"

// Element-wise float32 loops over eight lanes, n a multiple of 8; each lane
// does the one IEEE operation the Go loop does, so the bits are the same.

// func mulFloat32s(n int, x, y, z *float32)
//
// z[i] = x[i] * y[i] for i < n.
TEXT ·mulFloat32s(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ z+24(FP), DX

mulloop:
	TESTQ   CX, CX
	JE      muldone
	VMOVUPS (SI), Y0
	VMULPS  (DI), Y0, Y0
	VMOVUPS Y0, (DX)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, DX
	SUBQ    $8, CX
	JMP     mulloop

muldone:
	VZEROUPPER
	RET

// func subFloat32s(n int, x, y, z *float32)
//
// z[i] = x[i] - y[i] for i < n.
TEXT ·subFloat32s(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ z+24(FP), DX

subloop:
	TESTQ   CX, CX
	JE      subdone
	VMOVUPS (SI), Y0
	VSUBPS  (DI), Y0, Y0
	VMOVUPS Y0, (DX)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, DX
	SUBQ    $8, CX
	JMP     subloop

subdone:
	VZEROUPPER
	RET

// func divFloat32s(n int, x, y, z *float32)
//
// z[i] = x[i] / y[i] for i < n.
TEXT ·divFloat32s(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ z+24(FP), DX

divloop:
	TESTQ   CX, CX
	JE      divdone
	VMOVUPS (SI), Y0
	VDIVPS  (DI), Y0, Y0
	VMOVUPS Y0, (DX)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, DX
	SUBQ    $8, CX
	JMP     divloop

divdone:
	VZEROUPPER
	RET

// func scaleToFloat32s(n int, x *float32, s float32, z *float32)
//
// z[i] = x[i] * s for i < n.
TEXT ·scaleToFloat32s(SB), NOSPLIT, $0-32
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	VBROADCASTSS s+16(FP), Y1
	MOVQ         z+24(FP), DX

scaletoloop:
	TESTQ   CX, CX
	JE      scaletodone
	VMULPS  (SI), Y1, Y0
	VMOVUPS Y0, (DX)
	ADDQ    $32, SI
	ADDQ    $32, DX
	SUBQ    $8, CX
	JMP     scaletoloop

scaletodone:
	VZEROUPPER
	RET
