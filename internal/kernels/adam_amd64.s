#include "textflag.h"

// Adam's per-element update (adam.go) for float32 weights and gradients,
// in four float64 lanes (VCVTPS2PD widens four floats to a YMM register),
// n a multiple of 4: every operation in the order of adamGo's Go loop and
// none fused, so the results equal its bit for bit. AVX2.

// func adamFloat32s(n int, w, grad *float32, m, v *float64, b1, c1, b2, c2, eps, bias2Sqrt, stepSize, shrink float64) float32
//
// For j < n, with gj = float64(grad[j]):
//
//	m[j] = b1*m[j] + c1*gj
//	v[j] = b2*v[j] + (c2*gj)*gj
//	w[j] = float32(w[j]*shrink - (stepSize*m[j])/(sqrt(v[j])/bias2Sqrt + eps))
//
// and returns the sum of w[j]-w[j] in float32 over the new weights: 0 when
// they are all finite, else NaN.
TEXT ·adamFloat32s(SB), NOSPLIT, $0-108
	MOVQ         n+0(FP), CX
	MOVQ         w+8(FP), SI
	MOVQ         grad+16(FP), DI
	MOVQ         m+24(FP), R8
	MOVQ         v+32(FP), R9
	VBROADCASTSD b1+40(FP), Y8
	VBROADCASTSD c1+48(FP), Y9
	VBROADCASTSD b2+56(FP), Y10
	VBROADCASTSD c2+64(FP), Y11
	VBROADCASTSD eps+72(FP), Y12
	VBROADCASTSD bias2Sqrt+80(FP), Y13
	VBROADCASTSD stepSize+88(FP), Y14
	VBROADCASTSD shrink+96(FP), Y15
	VXORPS       X7, X7, X7

adamloop:
	TESTQ      CX, CX
	JE         adamdone
	VCVTPS2PD  (DI), Y0     // g
	VMULPD     (R8), Y8, Y1 // b1*m
	VMULPD     Y0, Y9, Y2   // c1*g
	VADDPD     Y2, Y1, Y1   // m = b1*m + c1*g
	VMOVUPD    Y1, (R8)
	VMULPD     (R9), Y10, Y3 // b2*v
	VMULPD     Y0, Y11, Y4   // c2*g
	VMULPD     Y0, Y4, Y4    // (c2*g)*g
	VADDPD     Y4, Y3, Y3    // v = b2*v + (c2*g)*g
	VMOVUPD    Y3, (R9)
	VSQRTPD    Y3, Y3        // sqrt(v)
	VDIVPD     Y13, Y3, Y3   // sqrt(v)/bias2Sqrt
	VADDPD     Y12, Y3, Y3   // sqrt(v)/bias2Sqrt + eps
	VMULPD     Y1, Y14, Y1   // stepSize*m
	VDIVPD     Y3, Y1, Y1    // (stepSize*m)/(sqrt(v)/bias2Sqrt + eps)
	VCVTPS2PD  (SI), Y5      // w
	VMULPD     Y15, Y5, Y5   // w*shrink
	VSUBPD     Y1, Y5, Y5    // w*shrink - (stepSize*m)/(...)
	VCVTPD2PSY Y5, X5        // rounded once to float32
	VMOVUPS    X5, (SI)
	VSUBPS     X5, X5, X6    // w-w: 0, or NaN for Inf or NaN
	VADDPS     X6, X7, X7
	ADDQ       $16, SI
	ADDQ       $16, DI
	ADDQ       $32, R8
	ADDQ       $32, R9
	SUBQ       $4, CX
	JMP        adamloop

adamdone:
	VMOVHLPS  X7, X7, X0
	VADDPS    X0, X7, X7
	VMOVSHDUP X7, X0
	VADDSS    X0, X7, X7
	VMOVSS    X7, ret+104(FP)
	VZEROUPPER
	RET
