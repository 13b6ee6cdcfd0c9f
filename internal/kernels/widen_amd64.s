#include "textflag.h"

// Widen's loops (half.go): n 16-bit values at src to float32 at dst, n a
// multiple of the step (16 for AVX-512, 8 for AVX2). BF16 is a zero
// extension and a 16-bit shift, F16 is VCVTPH2PS; both are exact.

#define WIDEN_ARGS \
	MOVQ n+0(FP), CX \
	MOVQ dst+8(FP), DI \
	MOVQ src+16(FP), SI \
	XORQ AX, AX

// func widenBF16AVX512(n int, dst *float32, src *uint16)
TEXT ·widenBF16AVX512(SB), NOSPLIT, $0-24
	WIDEN_ARGS

bf16z:
	VPMOVZXWD (SI)(AX*2), Z0
	VPSLLD    $16, Z0, Z0
	VMOVUPS   Z0, (DI)(AX*4)
	ADDQ      $16, AX
	CMPQ      AX, CX
	JLT       bf16z
	VZEROUPPER
	RET

// func widenF16AVX512(n int, dst *float32, src *uint16)
TEXT ·widenF16AVX512(SB), NOSPLIT, $0-24
	WIDEN_ARGS

f16z:
	VCVTPH2PS (SI)(AX*2), Z0
	VMOVUPS   Z0, (DI)(AX*4)
	ADDQ      $16, AX
	CMPQ      AX, CX
	JLT       f16z
	VZEROUPPER
	RET

// func widenBF16AVX2(n int, dst *float32, src *uint16)
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	WIDEN_ARGS

bf16y:
	VPMOVZXWD (SI)(AX*2), Y0
	VPSLLD    $16, Y0, Y0
	VMOVUPS   Y0, (DI)(AX*4)
	ADDQ      $8, AX
	CMPQ      AX, CX
	JLT       bf16y
	VZEROUPPER
	RET

// func widenF16AVX2(n int, dst *float32, src *uint16)
TEXT ·widenF16AVX2(SB), NOSPLIT, $0-24
	WIDEN_ARGS

f16y:
	VCVTPH2PS (SI)(AX*2), Y0
	VMOVUPS   Y0, (DI)(AX*4)
	ADDQ      $8, AX
	CMPQ      AX, CX
	JLT       f16y
	VZEROUPPER
	RET
