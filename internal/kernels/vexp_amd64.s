#include "textflag.h"

// LANES8 defines name<> as eight float32 lanes holding the bits v, read-only.
#define LANES8(name, v) \
	DATA name<>+0(SB)/4, $v \
	DATA name<>+4(SB)/4, $v \
	DATA name<>+8(SB)/4, $v \
	DATA name<>+12(SB)/4, $v \
	DATA name<>+16(SB)/4, $v \
	DATA name<>+20(SB)/4, $v \
	DATA name<>+24(SB)/4, $v \
	DATA name<>+28(SB)/4, $v \
	GLOBL name<>(SB), RODATA|NOPTR, $32

LANES8(expLog2e, 0x3fb8aa3b)
LANES8(expLn2Hi, 0x3f318000)
LANES8(expLn2Lo, 0xb95e8083)
LANES8(expC5, 0x39506967)
LANES8(expC4, 0x3ab743ce)
LANES8(expC3, 0x3c088908)
LANES8(expC2, 0x3d2aa9c1)
LANES8(expC1, 0x3e2aaaaa)
LANES8(expC0, 0x3f000000)
LANES8(expOne, 0x3f800000)
LANES8(expHi, 0x42b00000)
LANES8(expLo, 0xc2ae0000)
LANES8(expBias, 0x0000007f)

DATA expTailMask<>+0(SB)/4, $0xffffffff
DATA expTailMask<>+4(SB)/4, $0xffffffff
DATA expTailMask<>+8(SB)/4, $0xffffffff
DATA expTailMask<>+12(SB)/4, $0xffffffff
DATA expTailMask<>+16(SB)/4, $0xffffffff
DATA expTailMask<>+20(SB)/4, $0xffffffff
DATA expTailMask<>+24(SB)/4, $0xffffffff
DATA expTailMask<>+28(SB)/4, $0xffffffff
DATA expTailMask<>+32(SB)/4, $0x00000000
DATA expTailMask<>+36(SB)/4, $0x00000000
DATA expTailMask<>+40(SB)/4, $0x00000000
DATA expTailMask<>+44(SB)/4, $0x00000000
DATA expTailMask<>+48(SB)/4, $0x00000000
DATA expTailMask<>+52(SB)/4, $0x00000000
DATA expTailMask<>+56(SB)/4, $0x00000000
DATA expTailMask<>+60(SB)/4, $0x00000000
GLOBL expTailMask<>(SB), RODATA|NOPTR, $64

// EXP8 replaces Y0 by exp((Y0 - Y15) * Y14) lane by lane (Cephes expf:
// clamp to [-87, 88], n = round(x log2 e), r = x - n ln 2 in two parts,
// degree-7 polynomial, times 2^n built in the exponent bits); arguments
// below -87 give 0 (the true value is below 1.7e-38), NaN stays NaN (the
// clamps return their second source, x, when it is NaN, and the compare
// keeps unordered lanes). Needs Y4 = 88, Y5 = -87; uses Y1-Y3, Y6.
#define EXP8 \
	VSUBPS       Y15, Y0, Y0 \
	VMULPS       Y14, Y0, Y0 \
	VCMPPS       $5, Y5, Y0, Y6 \
	VMINPS       Y0, Y4, Y0 \
	VMAXPS       Y0, Y5, Y0 \
	VMULPS       expLog2e<>(SB), Y0, Y1 \
	VROUNDPS     $0, Y1, Y1 \
	VFNMADD231PS expLn2Hi<>(SB), Y1, Y0 \
	VFNMADD231PS expLn2Lo<>(SB), Y1, Y0 \
	VMOVUPS      expC5<>(SB), Y2 \
	VFMADD213PS  expC4<>(SB), Y0, Y2 \
	VFMADD213PS  expC3<>(SB), Y0, Y2 \
	VFMADD213PS  expC2<>(SB), Y0, Y2 \
	VFMADD213PS  expC1<>(SB), Y0, Y2 \
	VFMADD213PS  expC0<>(SB), Y0, Y2 \
	VMULPS       Y0, Y0, Y3 \
	VFMADD213PS  Y0, Y3, Y2 \
	VADDPS       expOne<>(SB), Y2, Y2 \
	VCVTPS2DQ    Y1, Y1 \
	VPADDD       expBias<>(SB), Y1, Y1 \
	VPSLLD       $23, Y1, Y1 \
	VMULPS       Y1, Y2, Y0 \
	VANDPS       Y6, Y0, Y0

// REDUCE8 leaves in X0 Y's eight float32 lanes reduced by an operation
// (OPPS its packed, OPSS its scalar instruction; X is Y's low half): the
// halves, then the pairs, then the last two. Uses X1.
#define REDUCE8(OPPS, OPSS, Y, X) \
	VEXTRACTF128 $1, Y, X1 \
	OPPS         X, X1, X0 \
	VMOVHLPS     X0, X0, X1 \
	OPPS         X1, X0, X0 \
	VPSHUFD      $1, X0, X1 \
	OPSS         X1, X0, X0

// func expShifted(n int, x *float32, scale, shift float32, y *float32) float32
//
// y[i] = exp(scale*(x[i] - shift)) for 0 <= i < n (subtracting first keeps
// the argument exact to a rounding of itself, however large x and shift); returns the sum of the
// y[i] (eight float32 partial sums). A last partial group of eight is read
// and written through a lane mask, so nothing past x[n-1] or y[n-1] is
// touched.
TEXT ·expShifted(SB), NOSPLIT, $0-36
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	VBROADCASTSS scale+16(FP), Y14
	VBROADCASTSS shift+20(FP), Y15
	MOVQ         y+24(FP), DI
	VMOVUPS      expHi<>(SB), Y4
	VMOVUPS      expLo<>(SB), Y5
	VXORPS       Y13, Y13, Y13

loop:
	CMPQ    CX, $8
	JL      tail
	VMOVUPS (SI), Y0
	EXP8
	VMOVUPS Y0, (DI)
	VADDPS  Y0, Y13, Y13
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     loop

tail:
	TESTQ      CX, CX
	JE         done
	LEAQ       expTailMask<>(SB), AX
	MOVQ       $8, DX
	SUBQ       CX, DX
	VMOVUPS    (AX)(DX*4), Y12
	VMASKMOVPS (SI), Y12, Y0
	EXP8
	VANDPS     Y12, Y0, Y0
	VMASKMOVPS Y0, Y12, (DI)
	VADDPS     Y0, Y13, Y13

done:
	REDUCE8(VADDPS, VADDSS, Y13, X13)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func maxFloat32s(n int, x *float32) float32
//
// The largest of x[0:n], n a positive multiple of 8 (VMAXPS: a NaN in x
// may be skipped, but it reaches the softmax through exp anyway).
TEXT ·maxFloat32s(SB), NOSPLIT, $0-20
	MOVQ    n+0(FP), CX
	MOVQ    x+8(FP), SI
	VMOVUPS (SI), Y0
	ADDQ    $32, SI
	SUBQ    $8, CX

maxloop:
	TESTQ   CX, CX
	JE      maxdone
	VMAXPS  (SI), Y0, Y0
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     maxloop

maxdone:
	REDUCE8(VMAXPS, VMAXSS, Y0, X0)
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func dotFloat32s(n int, x, y *float32) float32
//
// sum x[i]*y[i] over i < n, n a multiple of 8, in eight float32 lanes.
TEXT ·dotFloat32s(SB), NOSPLIT, $0-28
	MOVQ   n+0(FP), CX
	MOVQ   x+8(FP), SI
	MOVQ   y+16(FP), DI
	VXORPS Y0, Y0, Y0

dotloop:
	TESTQ       CX, CX
	JE          dotdone
	VMOVUPS     (SI), Y1
	VFMADD231PS (DI), Y1, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         dotloop

dotdone:
	REDUCE8(VADDPS, VADDSS, Y0, X0)
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func softmaxGradFloat32s(n int, y, dy, dx *float32, scale, dot float32)
//
// dx[i] = scale * y[i] * (dy[i] - dot) for i < n, n a multiple of 8.
TEXT ·softmaxGradFloat32s(SB), NOSPLIT, $0-40
	MOVQ         n+0(FP), CX
	MOVQ         y+8(FP), SI
	MOVQ         dy+16(FP), DI
	MOVQ         dx+24(FP), DX
	VBROADCASTSS scale+32(FP), Y2
	VBROADCASTSS dot+36(FP), Y3

gradloop:
	TESTQ   CX, CX
	JE      graddone
	VMOVUPS (DI), Y0
	VSUBPS  Y3, Y0, Y0
	VMULPS  (SI), Y2, Y1
	VMULPS  Y1, Y0, Y0
	VMOVUPS Y0, (DX)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, DX
	SUBQ    $8, CX
	JMP     gradloop

graddone:
	VZEROUPPER
	RET

LANES8(geluA, 0x3d372713)
LANES8(geluA3, 0x3e095d4f)
LANES8(geluC, 0x3f4c422a)
LANES8(geluSign, 0x80000000)

// SIGMOIDCONSTS loads what GELUE and SILUE need: Y4 = 88, Y5 = -87 for
// EXP8, Y13 = Y14 = 1, Y15 = 0.
#define SIGMOIDCONSTS \
	VMOVUPS expHi<>(SB), Y4 \
	VMOVUPS expLo<>(SB), Y5 \
	VMOVUPS expOne<>(SB), Y13 \
	VMOVUPS Y13, Y14 \
	VXORPS  Y15, Y15, Y15

// GELUE sets, from x in Y7, Y0 = e = exp(-|2u|) with u = sqrt(2/pi) (x +
// 0.044715 x^3) and Y10 = negPick(x, e, 1) (e where x's sign bit is set,
// else 1), Y9 = 1 + e, as kernels.GELU's Go loop. Needs Y4, Y5 as EXP8,
// Y14 = 1, Y15 = 0, Y13 = 1; uses Y1-Y3, Y6, Y8.
#define GELUE \
	VMULPS      Y7, Y7, Y8 \
	VMULPS      Y7, Y8, Y8 \
	VFMADD132PS geluA<>(SB), Y7, Y8 \
	VMULPS      geluC<>(SB), Y8, Y8 \
	VADDPS      Y8, Y8, Y8 \
	VORPS       geluSign<>(SB), Y8, Y0 \
	EXP8 \
	VBLENDVPS   Y7, Y0, Y13, Y10 \
	VADDPS      Y13, Y0, Y9

// func geluFloat32s(n int, x, y *float32)
//
// y[i] = GELU(x[i]) = x s with s = sigmoid(2u) = negPick(x, e, 1) / (1 + e),
// for 0 <= i < n, n a multiple of 8.
TEXT ·geluFloat32s(SB), NOSPLIT, $0-24
	MOVQ    n+0(FP), CX
	MOVQ    x+8(FP), SI
	MOVQ    y+16(FP), DI
	SIGMOIDCONSTS

geluloop:
	CMPQ    CX, $8
	JL      geludone
	VMOVUPS (SI), Y7
	GELUE
	VMULPS  Y7, Y10, Y10
	VDIVPS  Y9, Y10, Y10
	VMOVUPS Y10, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     geluloop

geludone:
	VZEROUPPER
	RET

// func geluGradFloat32s(n int, x, dy, dx *float32)
//
// dx[i] = dy[i] (s + 2 x s (1 - s) sqrt(2/pi) (1 + 3 * 0.044715 x^2)) with
// r = 1 / (1 + e), s = negPick(x, e, 1) r, s (1 - s) = e r r, for
// 0 <= i < n, n a multiple of 8.
TEXT ·geluGradFloat32s(SB), NOSPLIT, $0-32
	MOVQ    n+0(FP), CX
	MOVQ    x+8(FP), SI
	MOVQ    dy+16(FP), BX
	MOVQ    dx+24(FP), DI
	SIGMOIDCONSTS

gradloop:
	CMPQ        CX, $8
	JL          graddone
	VMOVUPS     (SI), Y7
	GELUE
	VDIVPS      Y9, Y13, Y9
	VMULPS      Y9, Y10, Y10
	VMULPS      Y9, Y0, Y0
	VMULPS      Y9, Y0, Y0
	VADDPS      Y7, Y7, Y11
	VMULPS      Y0, Y11, Y11
	VMULPS      geluC<>(SB), Y11, Y11
	VMULPS      geluA3<>(SB), Y7, Y12
	VFMADD213PS Y13, Y7, Y12
	VFMADD213PS Y10, Y12, Y11
	VMULPS      (BX), Y11, Y11
	VMOVUPS     Y11, (DI)
	ADDQ        $32, SI
	ADDQ        $32, BX
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         gradloop

graddone:
	VZEROUPPER
	RET

// SILUE sets, from x in Y7, Y0 = e = exp(-|x|), Y10 = negPick(x, e, 1) and
// Y9 = 1 + e, as kernels.SiLUMul's Go loop. Needs Y4, Y5 as EXP8, Y14 = 1,
// Y15 = 0, Y13 = 1; uses Y1-Y3, Y6.
#define SILUE \
	VORPS     geluSign<>(SB), Y7, Y0 \
	EXP8 \
	VBLENDVPS Y7, Y0, Y13, Y10 \
	VADDPS    Y13, Y0, Y9

// func siluMulFloat32s(n int, x, u, y *float32)
//
// y[i] = silu(x[i]) u[i] = x negPick(x, e, 1) / (1 + e) u, for 0 <= i < n,
// n a multiple of 8: the Go loop's operations in its order (x is SiLUMul's
// g, a register name here).
TEXT ·siluMulFloat32s(SB), NOSPLIT, $0-32
	MOVQ    n+0(FP), CX
	MOVQ    x+8(FP), SI
	MOVQ    u+16(FP), DX
	MOVQ    y+24(FP), DI
	SIGMOIDCONSTS

siluloop:
	CMPQ    CX, $8
	JL      siludone
	VMOVUPS (SI), Y7
	SILUE
	VMULPS  Y10, Y7, Y10
	VDIVPS  Y9, Y10, Y10
	VMULPS  (DX), Y10, Y10
	VMOVUPS Y10, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     siluloop

siludone:
	VZEROUPPER
	RET

// func siluMulGradFloat32s(n int, x, u, dy, dg *float32)
//
// dg[i] = dy[i] u[i] (s + x e r r) with r = 1 / (1 + e), s = negPick(x, e,
// 1) r, for 0 <= i < n, n a multiple of 8: the Go loop's operations in its
// order.
TEXT ·siluMulGradFloat32s(SB), NOSPLIT, $0-40
	MOVQ    n+0(FP), CX
	MOVQ    x+8(FP), SI
	MOVQ    u+16(FP), DX
	MOVQ    dy+24(FP), BX
	MOVQ    dg+32(FP), DI
	SIGMOIDCONSTS

silugradloop:
	CMPQ    CX, $8
	JL      silugraddone
	VMOVUPS (SI), Y7
	SILUE
	VDIVPS  Y9, Y13, Y9
	VMULPS  Y9, Y10, Y10
	VMULPS  Y0, Y7, Y11
	VMULPS  Y9, Y11, Y11
	VMULPS  Y9, Y11, Y11
	VADDPS  Y11, Y10, Y11
	VMOVUPS (BX), Y12
	VMULPS  (DX), Y12, Y12
	VMULPS  Y11, Y12, Y12
	VMOVUPS Y12, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, BX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     silugradloop

silugraddone:
	VZEROUPPER
	RET
