#include "textflag.h"
#include "fold_amd64.h"

// The GEMV dot products over 16-bit weights (halfgemm.go): gemv_amd64.s's
// kernels with each 16 weights widened to float32 as they are loaded, BF16
// by a zero extension and a 16-bit shift, F16 by VCVTPH2PS, both exact.
// Everything after the load is the float32 kernel's: element p in lane
// p%16, a product rounded to float32 and then a sum, the lanes folded by
// FOLD16/FOLD8; so out gets the float32 kernel's bits over the widened
// rows. Rows go eight at a time (AVX-512) or four (AVX2), then one at a
// time. The loops take 32 elements a step, a 64-byte line of each row, and
// ask for the line PREFETCH_AHEAD bytes on in each row (rows are separate
// streams, which the hardware prefetcher alone follows less far ahead),
// then a last step of 16 when k16 is an odd multiple of 16.

#define PREFETCH_AHEAD 1024

// Widen 16 weights at addr into a ZMM register, or 8 into a YMM one.
#define BF16Z(addr, z) VPMOVZXWD addr, z; VPSLLD $16, z, z
#define F16Z(addr, z) VCVTPH2PS addr, z
#define BF16Y(addr, y) VPMOVZXWD addr, y; VPSLLD $16, y, y
#define F16Y(addr, y) VCVTPH2PS addr, y

// HALF_ARGS loads k16-16 (in elements) into CX, x into SI, w into DI, the
// row stride in bytes into R8 (3 rows in R10), rows into R9 and out into
// DX. AX indexes elements: x at (SI)(AX*4), a row at (row)(AX*2).
#define HALF_ARGS \
	MOVQ k16+0(FP), CX \
	SUBQ $16, CX \
	MOVQ x+8(FP), SI \
	MOVQ w+16(FP), DI \
	MOVQ ldw+24(FP), R8 \
	SHLQ $1, R8 \
	LEAQ (R8)(R8*2), R10 \
	MOVQ rows+32(FP), R9 \
	MOVQ out+40(FP), DX

// ROWZ adds x (Z4) times a row's 16 widened weights at wo(row)(AX*2) to acc.
#define ROWZ(CVT, row, wo, acc, tmp) \
	CVT(wo(row)(AX*2), tmp) \
	VMULPS tmp, Z4, tmp \
	VADDPS tmp, acc, acc

// STEP8Z is one 16-element step of eight rows (DI, R11-R15, BX, R10 into
// Z0-Z3, Z10-Z13) at elements AX+xo/4.
#define STEP8Z(CVT, xo, wo) \
	VMOVUPS xo(SI)(AX*4), Z4 \
	ROWZ(CVT, DI, wo, Z0, Z5) \
	ROWZ(CVT, R11, wo, Z1, Z6) \
	ROWZ(CVT, R12, wo, Z2, Z7) \
	ROWZ(CVT, R13, wo, Z3, Z8) \
	ROWZ(CVT, R14, wo, Z10, Z5) \
	ROWZ(CVT, R15, wo, Z11, Z6) \
	ROWZ(CVT, BX, wo, Z12, Z7) \
	ROWZ(CVT, R10, wo, Z13, Z8)

#define PREFETCH8 \
	PREFETCHT0 PREFETCH_AHEAD(DI)(AX*2) \
	PREFETCHT0 PREFETCH_AHEAD(R11)(AX*2) \
	PREFETCHT0 PREFETCH_AHEAD(R12)(AX*2) \
	PREFETCHT0 PREFETCH_AHEAD(R13)(AX*2) \
	PREFETCHT0 PREFETCH_AHEAD(R14)(AX*2) \
	PREFETCHT0 PREFETCH_AHEAD(R15)(AX*2) \
	PREFETCHT0 PREFETCH_AHEAD(BX)(AX*2) \
	PREFETCHT0 PREFETCH_AHEAD(R10)(AX*2)

// GEMV_HALF_512 is the AVX-512 kernel's body for weights widened by CVT.
#define GEMV_HALF_512(CVT) \
	HALF_ARGS \
eight: \
	CMPQ   R9, $8 \
	JLT    one \
	LEAQ   (DI)(R8*1), R11 \
	LEAQ   (DI)(R8*2), R12 \
	LEAQ   (DI)(R10*1), R13 \
	LEAQ   (DI)(R8*4), R14 \
	LEAQ   (R14)(R8*1), R15 \
	LEAQ   (R14)(R8*2), BX \
	ADDQ   R14, R10 \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	XORQ   AX, AX \
loop8: \
	CMPQ   AX, CX \
	JGE    last8 \
	PREFETCH8 \
	STEP8Z(CVT, 0, 0) \
	STEP8Z(CVT, 64, 32) \
	ADDQ   $32, AX \
	JMP    loop8 \
last8: \
	JG     fold8 \
	STEP8Z(CVT, 0, 0) \
fold8: \
	FOLD16(Z0, Y0, X0, Y9, X9) \
	FOLD16(Z1, Y1, X1, Y9, X9) \
	FOLD16(Z2, Y2, X2, Y9, X9) \
	FOLD16(Z3, Y3, X3, Y9, X9) \
	FOLD16(Z10, Y10, X10, Y9, X9) \
	FOLD16(Z11, Y11, X11, Y9, X9) \
	FOLD16(Z12, Y12, X12, Y9, X9) \
	FOLD16(Z13, Y13, X13, Y9, X9) \
	VMOVSS X0, (DX) \
	VMOVSS X1, 4(DX) \
	VMOVSS X2, 8(DX) \
	VMOVSS X3, 12(DX) \
	VMOVSS X10, 16(DX) \
	VMOVSS X11, 20(DX) \
	VMOVSS X12, 24(DX) \
	VMOVSS X13, 28(DX) \
	LEAQ   (DI)(R8*8), DI \
	LEAQ   (R8)(R8*2), R10 \
	ADDQ   $32, DX \
	SUBQ   $8, R9 \
	JMP    eight \
one: \
	TESTQ  R9, R9 \
	JE     done \
	VPXORD Z0, Z0, Z0 \
	XORQ   AX, AX \
loop1: \
	CMPQ   AX, CX \
	JGE    last1 \
	PREFETCHT0 PREFETCH_AHEAD(DI)(AX*2) \
	VMOVUPS (SI)(AX*4), Z4 \
	ROWZ(CVT, DI, 0, Z0, Z5) \
	VMOVUPS 64(SI)(AX*4), Z4 \
	ROWZ(CVT, DI, 32, Z0, Z5) \
	ADDQ   $32, AX \
	JMP    loop1 \
last1: \
	JG     fold1 \
	VMOVUPS (SI)(AX*4), Z4 \
	ROWZ(CVT, DI, 0, Z0, Z5) \
fold1: \
	FOLD16(Z0, Y0, X0, Y9, X9) \
	VMOVSS X0, (DX) \
	ADDQ   R8, DI \
	ADDQ   $4, DX \
	DECQ   R9 \
	JMP    one \
done: \
	VZEROUPPER \
	RET

// func gemvDotsBF16AVX512(k16 int, x *float32, w *uint16, ldw, rows int, out *float32)
TEXT ·gemvDotsBF16AVX512(SB), NOSPLIT, $0-48
	GEMV_HALF_512(BF16Z)

// func gemvDotsF16AVX512(k16 int, x *float32, w *uint16, ldw, rows int, out *float32)
TEXT ·gemvDotsF16AVX512(SB), NOSPLIT, $0-48
	GEMV_HALF_512(F16Z)

// ROWY adds x (Y8 lanes 0-7, Y9 lanes 8-15) times a row's 16 widened
// weights at wo(row)(AX*2) to lo and hi.
#define ROWY(CVT, row, wo, lo, hi) \
	CVT(wo(row)(AX*2), Y10) \
	VMULPS Y10, Y8, Y10 \
	VADDPS Y10, lo, lo \
	CVT(wo+16(row)(AX*2), Y11) \
	VMULPS Y11, Y9, Y11 \
	VADDPS Y11, hi, hi

// STEP4Y is one 16-element step of four rows (DI, R11-R13 into Y0-Y7) at
// elements AX+xo/4.
#define STEP4Y(CVT, xo, wo) \
	VMOVUPS xo(SI)(AX*4), Y8 \
	VMOVUPS xo+32(SI)(AX*4), Y9 \
	ROWY(CVT, DI, wo, Y0, Y1) \
	ROWY(CVT, R11, wo, Y2, Y3) \
	ROWY(CVT, R12, wo, Y4, Y5) \
	ROWY(CVT, R13, wo, Y6, Y7)

// GEMV_HALF_256 is the AVX2 kernel's body for weights widened by CVT.
#define GEMV_HALF_256(CVT) \
	HALF_ARGS \
four: \
	CMPQ   R9, $4 \
	JLT    one \
	LEAQ   (DI)(R8*1), R11 \
	LEAQ   (DI)(R8*2), R12 \
	LEAQ   (DI)(R10*1), R13 \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7 \
	XORQ   AX, AX \
loop4: \
	CMPQ   AX, CX \
	JGE    last4 \
	PREFETCHT0 PREFETCH_AHEAD(DI)(AX*2) \
	PREFETCHT0 PREFETCH_AHEAD(R11)(AX*2) \
	PREFETCHT0 PREFETCH_AHEAD(R12)(AX*2) \
	PREFETCHT0 PREFETCH_AHEAD(R13)(AX*2) \
	STEP4Y(CVT, 0, 0) \
	STEP4Y(CVT, 64, 32) \
	ADDQ   $32, AX \
	JMP    loop4 \
last4: \
	JG     fold4 \
	STEP4Y(CVT, 0, 0) \
fold4: \
	VADDPS Y1, Y0, Y0 \
	VADDPS Y3, Y2, Y2 \
	VADDPS Y5, Y4, Y4 \
	VADDPS Y7, Y6, Y6 \
	FOLD8(Y0, X0, Y9, X9) \
	FOLD8(Y2, X2, Y9, X9) \
	FOLD8(Y4, X4, Y9, X9) \
	FOLD8(Y6, X6, Y9, X9) \
	VMOVSS X0, (DX) \
	VMOVSS X2, 4(DX) \
	VMOVSS X4, 8(DX) \
	VMOVSS X6, 12(DX) \
	LEAQ   (DI)(R8*4), DI \
	ADDQ   $16, DX \
	SUBQ   $4, R9 \
	JMP    four \
one: \
	TESTQ  R9, R9 \
	JE     done \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	XORQ   AX, AX \
loop1: \
	CMPQ   AX, CX \
	JGE    last1 \
	PREFETCHT0 PREFETCH_AHEAD(DI)(AX*2) \
	VMOVUPS (SI)(AX*4), Y8 \
	VMOVUPS 32(SI)(AX*4), Y9 \
	ROWY(CVT, DI, 0, Y0, Y1) \
	VMOVUPS 64(SI)(AX*4), Y8 \
	VMOVUPS 96(SI)(AX*4), Y9 \
	ROWY(CVT, DI, 32, Y0, Y1) \
	ADDQ   $32, AX \
	JMP    loop1 \
last1: \
	JG     fold1 \
	VMOVUPS (SI)(AX*4), Y8 \
	VMOVUPS 32(SI)(AX*4), Y9 \
	ROWY(CVT, DI, 0, Y0, Y1) \
fold1: \
	VADDPS Y1, Y0, Y0 \
	FOLD8(Y0, X0, Y9, X9) \
	VMOVSS X0, (DX) \
	ADDQ   R8, DI \
	ADDQ   $4, DX \
	DECQ   R9 \
	JMP    one \
done: \
	VZEROUPPER \
	RET

// func gemvDotsBF16AVX2(k16 int, x *float32, w *uint16, ldw, rows int, out *float32)
TEXT ·gemvDotsBF16AVX2(SB), NOSPLIT, $0-48
	GEMV_HALF_256(BF16Y)

// func gemvDotsF16AVX2(k16 int, x *float32, w *uint16, ldw, rows int, out *float32)
TEXT ·gemvDotsF16AVX2(SB), NOSPLIT, $0-48
	GEMV_HALF_256(F16Y)
