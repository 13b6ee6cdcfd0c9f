#include "textflag.h"

// Element-wise float32 loops over eight lanes, n a multiple of 8; each lane
// does the one IEEE operation the Go loop does, so the bits are the same.

// BINARY8 is the body of a func(n int, x, y, z *float32) that sets
// z[i] = x[i] op y[i] for i < n, OP being op's packed instruction.
#define BINARY8(OP) \
	MOVQ n+0(FP), CX \
	MOVQ x+8(FP), SI \
	MOVQ y+16(FP), DI \
	MOVQ z+24(FP), DX \
loop: \
	TESTQ   CX, CX \
	JE      done \
	VMOVUPS (SI), Y0 \
	OP      (DI), Y0, Y0 \
	VMOVUPS Y0, (DX) \
	ADDQ    $32, SI \
	ADDQ    $32, DI \
	ADDQ    $32, DX \
	SUBQ    $8, CX \
	JMP     loop \
done: \
	VZEROUPPER \
	RET

// func addFloat32s(n int, x, y, z *float32), and subFloat32s, mulFloat32s
// and divFloat32s of the same arguments.
TEXT ·addFloat32s(SB), NOSPLIT, $0-32
	BINARY8(VADDPS)

TEXT ·subFloat32s(SB), NOSPLIT, $0-32
	BINARY8(VSUBPS)

TEXT ·mulFloat32s(SB), NOSPLIT, $0-32
	BINARY8(VMULPS)

TEXT ·divFloat32s(SB), NOSPLIT, $0-32
	BINARY8(VDIVPS)

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
