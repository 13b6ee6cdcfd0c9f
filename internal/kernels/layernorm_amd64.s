#include "textflag.h"

// LayerNorm's row loops (layernorm.go): float32 rows in four float64 lanes
// (VCVTPS2PD widens four floats to a YMM register), n a multiple of 4,
// every operation in the order of the Go loops and none fused, so the
// results equal theirs bit for bit. AVX2.

// func sum4Float32s(n int, x *float32, lanes *[4]float64)
//
// lanes[i] = sum of x[j] over j < n, j%4 == i, added in order.
TEXT ·sum4Float32s(SB), NOSPLIT, $0-24
	MOVQ   n+0(FP), CX
	MOVQ   x+8(FP), SI
	MOVQ   lanes+16(FP), DI
	VXORPD Y0, Y0, Y0

sumloop:
	TESTQ     CX, CX
	JE        sumdone
	VCVTPS2PD (SI), Y1
	VADDPD    Y1, Y0, Y0
	ADDQ      $16, SI
	SUBQ      $4, CX
	JMP       sumloop

sumdone:
	VMOVUPD Y0, (DI)
	VZEROUPPER
	RET

// func sqDev4Float32s(n int, x *float32, mean float64, lanes *[4]float64)
//
// lanes[i] = sum of (x[j] - mean)^2 over j < n, j%4 == i.
TEXT ·sqDev4Float32s(SB), NOSPLIT, $0-32
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	VBROADCASTSD mean+16(FP), Y2
	MOVQ         lanes+24(FP), DI
	VXORPD       Y0, Y0, Y0

sqloop:
	TESTQ     CX, CX
	JE        sqdone
	VCVTPS2PD (SI), Y1
	VSUBPD    Y2, Y1, Y1
	VMULPD    Y1, Y1, Y1
	VADDPD    Y1, Y0, Y0
	ADDQ      $16, SI
	SUBQ      $4, CX
	JMP       sqloop

sqdone:
	VMOVUPD Y0, (DI)
	VZEROUPPER
	RET

// func layerNormFloat32s(n int, x, w, b *float32, mean, rstd float64, y *float32)
//
// y[j] = ((x[j] - mean) * rstd) * w[j] + b[j] for j < n, or without the
// + b[j] when b is nil (the branch is the same every iteration).
TEXT ·layerNormFloat32s(SB), NOSPLIT, $0-56
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DI
	MOVQ         b+24(FP), R8
	VBROADCASTSD mean+32(FP), Y6
	VBROADCASTSD rstd+40(FP), Y7
	MOVQ         y+48(FP), DX

lnloop:
	TESTQ      CX, CX
	JE         lndone
	VCVTPS2PD  (SI), Y0
	VSUBPD     Y6, Y0, Y0
	VMULPD     Y7, Y0, Y0
	VCVTPS2PD  (DI), Y1
	VMULPD     Y1, Y0, Y0
	TESTQ      R8, R8
	JE         lnstore
	VCVTPS2PD  (R8), Y1
	VADDPD     Y1, Y0, Y0
	ADDQ       $16, R8

lnstore:
	VCVTPD2PSY Y0, X0
	VMOVUPS    X0, (DX)
	ADDQ       $16, SI
	ADDQ       $16, DI
	ADDQ       $16, DX
	SUBQ       $4, CX
	JMP        lnloop

lndone:
	VZEROUPPER
	RET

// func layerNormGradSums(n int, x, w, dy *float32, mean, rstd float64, lanes *[8]float64)
//
// With g = dy[j] * w[j]: lanes[i] = sum of g and lanes[4+i] = sum of
// (g * (x[j] - mean)) * rstd, over j < n, j%4 == i.
TEXT ·layerNormGradSums(SB), NOSPLIT, $0-56
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DI
	MOVQ         dy+24(FP), R8
	VBROADCASTSD mean+32(FP), Y6
	VBROADCASTSD rstd+40(FP), Y7
	MOVQ         lanes+48(FP), DX
	VXORPD       Y4, Y4, Y4
	VXORPD       Y5, Y5, Y5

gsumloop:
	TESTQ     CX, CX
	JE        gsumdone
	VCVTPS2PD (R8), Y0
	VCVTPS2PD (DI), Y1
	VMULPD    Y1, Y0, Y0
	VADDPD    Y0, Y4, Y4
	VCVTPS2PD (SI), Y2
	VSUBPD    Y6, Y2, Y2
	VMULPD    Y2, Y0, Y0
	VMULPD    Y7, Y0, Y0
	VADDPD    Y0, Y5, Y5
	ADDQ      $16, SI
	ADDQ      $16, DI
	ADDQ      $16, R8
	SUBQ      $4, CX
	JMP       gsumloop

gsumdone:
	VMOVUPD Y4, (DX)
	VMOVUPD Y5, 32(DX)
	VZEROUPPER
	RET

// func layerNormGradFloat32s(n int, x, w, dy *float32, mean, rstd, m1, m2 float64, dx *float32)
//
// dx[j] = rstd * ((g - m1) - ((x[j] - mean) * rstd) * m2), g = dy[j] * w[j],
// for j < n.
TEXT ·layerNormGradFloat32s(SB), NOSPLIT, $0-72
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DI
	MOVQ         dy+24(FP), R8
	VBROADCASTSD mean+32(FP), Y6
	VBROADCASTSD rstd+40(FP), Y7
	VBROADCASTSD m1+48(FP), Y8
	VBROADCASTSD m2+56(FP), Y9
	MOVQ         dx+64(FP), DX

gradloop:
	TESTQ      CX, CX
	JE         graddone
	VCVTPS2PD  (R8), Y0
	VCVTPS2PD  (DI), Y1
	VMULPD     Y1, Y0, Y0
	VSUBPD     Y8, Y0, Y0
	VCVTPS2PD  (SI), Y2
	VSUBPD     Y6, Y2, Y2
	VMULPD     Y7, Y2, Y2
	VMULPD     Y9, Y2, Y2
	VSUBPD     Y2, Y0, Y0
	VMULPD     Y0, Y7, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS    X0, (DX)
	ADDQ       $16, SI
	ADDQ       $16, DI
	ADDQ       $16, R8
	ADDQ       $16, DX
	SUBQ       $4, CX
	JMP        gradloop

graddone:
	VZEROUPPER
	RET

// func layerNormGradWFloat32s(n int, x, dy *float32, mean, rstd float64, dw *float32)
//
// dw[j] += float32((dy[j] * (x[j] - mean)) * rstd) for j < n, the add in
// float32.
TEXT ·layerNormGradWFloat32s(SB), NOSPLIT, $0-48
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	MOVQ         dy+16(FP), R8
	VBROADCASTSD mean+24(FP), Y6
	VBROADCASTSD rstd+32(FP), Y7
	MOVQ         dw+40(FP), DX

gwloop:
	TESTQ      CX, CX
	JE         gwdone
	VCVTPS2PD  (SI), Y0
	VSUBPD     Y6, Y0, Y0
	VCVTPS2PD  (R8), Y1
	VMULPD     Y0, Y1, Y0
	VMULPD     Y7, Y0, Y0
	VCVTPD2PSY Y0, X0
	VADDPS     (DX), X0, X0
	VMOVUPS    X0, (DX)
	ADDQ       $16, SI
	ADDQ       $16, R8
	ADDQ       $16, DX
	SUBQ       $4, CX
	JMP        gwloop

gwdone:
	VZEROUPPER
	RET
