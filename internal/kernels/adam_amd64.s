#include "textflag.h"

// Adam's per-element update (adam.go) for float32 weights and gradients,
// in four float64 lanes (VCVTPS2PD widens four floats to a YMM register),
// n a multiple of 4: every operation in the order of adamGo's Go loop and
// none fused, so the results equal its bit for bit. AVX2. The two routines
// differ only in the moments' dtype: float64, or float32 widened at load and
// rounded once at store.

// ADAM_ARGS loads the arguments both routines share: the pointers in CX
// (n), SI (w), DI (grad), R8 (m), R9 (v); the scalars broadcast to Y8-Y15;
// X7, the finiteness sum, zeroed.
#define ADAM_ARGS \
	MOVQ         n+0(FP), CX \
	MOVQ         w+8(FP), SI \
	MOVQ         grad+16(FP), DI \
	MOVQ         m+24(FP), R8 \
	MOVQ         v+32(FP), R9 \
	VBROADCASTSD b1+40(FP), Y8 \
	VBROADCASTSD c1+48(FP), Y9 \
	VBROADCASTSD b2+56(FP), Y10 \
	VBROADCASTSD c2+64(FP), Y11 \
	VBROADCASTSD eps+72(FP), Y12 \
	VBROADCASTSD bias2Sqrt+80(FP), Y13 \
	VBROADCASTSD stepSize+88(FP), Y14 \
	VBROADCASTSD shrink+96(FP), Y15 \
	VXORPS       X7, X7, X7

// ADAM_WEIGHT takes m in Y1 and v in Y3 (float64, before any rounding),
// writes the new weights at (SI) and adds their w-w to X7 (0, or NaN for an
// infinite or NaN weight): sqrt(v)/bias2Sqrt + eps in Y3, stepSize*m over
// it in Y1, w*shrink minus that in Y5, rounded once to float32.
#define ADAM_WEIGHT \
	VSQRTPD    Y3, Y3 \
	VDIVPD     Y13, Y3, Y3 \
	VADDPD     Y12, Y3, Y3 \
	VMULPD     Y1, Y14, Y1 \
	VDIVPD     Y3, Y1, Y1 \
	VCVTPS2PD  (SI), Y5 \
	VMULPD     Y15, Y5, Y5 \
	VSUBPD     Y1, Y5, Y5 \
	VCVTPD2PSY Y5, X5 \
	VMOVUPS    X5, (SI) \
	VSUBPS     X5, X5, X6 \
	VADDPS     X6, X7, X7

// ADAM_SUM leaves X7's horizontal sum in its lowest lane.
#define ADAM_SUM \
	VMOVHLPS  X7, X7, X0 \
	VADDPS    X0, X7, X7 \
	VMOVSHDUP X7, X0 \
	VADDSS    X0, X7, X7

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
	ADAM_ARGS

adamloop:
	TESTQ     CX, CX
	JE        adamdone
	VCVTPS2PD (DI), Y0     // g
	VMULPD    (R8), Y8, Y1 // b1*m
	VMULPD    Y0, Y9, Y2   // c1*g
	VADDPD    Y2, Y1, Y1   // m = b1*m + c1*g
	VMOVUPD   Y1, (R8)
	VMULPD    (R9), Y10, Y3 // b2*v
	VMULPD    Y0, Y11, Y4   // c2*g
	VMULPD    Y0, Y4, Y4    // (c2*g)*g
	VADDPD    Y4, Y3, Y3    // v = b2*v + (c2*g)*g
	VMOVUPD   Y3, (R9)
	ADAM_WEIGHT
	ADDQ      $16, SI
	ADDQ      $16, DI
	ADDQ      $32, R8
	ADDQ      $32, R9
	SUBQ      $4, CX
	JMP       adamloop

adamdone:
	ADAM_SUM
	VMOVSS X7, ret+104(FP)
	VZEROUPPER
	RET

// func adamFloat32Moments(n int, w, grad, m, v *float32, b1, c1, b2, c2, eps, bias2Sqrt, stepSize, shrink float64) float32
//
// adamFloat32s with float32 moments: m[j] and v[j] are widened to float64,
// updated as there, and stored rounded to float32; the weight's step uses
// the float64 values before that rounding.
TEXT ·adamFloat32Moments(SB), NOSPLIT, $0-108
	ADAM_ARGS

momentsloop:
	TESTQ      CX, CX
	JE         momentsdone
	VCVTPS2PD  (DI), Y0   // g
	VCVTPS2PD  (R8), Y1   // m
	VMULPD     Y1, Y8, Y1 // b1*m
	VMULPD     Y0, Y9, Y2 // c1*g
	VADDPD     Y2, Y1, Y1 // m = b1*m + c1*g
	VCVTPD2PSY Y1, X2
	VMOVUPS    X2, (R8)
	VCVTPS2PD  (R9), Y3    // v
	VMULPD     Y3, Y10, Y3 // b2*v
	VMULPD     Y0, Y11, Y4 // c2*g
	VMULPD     Y0, Y4, Y4  // (c2*g)*g
	VADDPD     Y4, Y3, Y3  // v = b2*v + (c2*g)*g
	VCVTPD2PSY Y3, X4
	VMOVUPS    X4, (R9)
	ADAM_WEIGHT
	ADDQ       $16, SI
	ADDQ       $16, DI
	ADDQ       $16, R8
	ADDQ       $16, R9
	SUBQ       $4, CX
	JMP        momentsloop

momentsdone:
	ADAM_SUM
	VMOVSS X7, ret+104(FP)
	VZEROUPPER
	RET
