// The GEMV's lane folds, shared by gemv_amd64.s and halfgemv_amd64.s.

// FOLD16(lo, ylo, xlo, ytmp, xtmp) folds 16 lanes held in lo (a ZMM) into
// lane 0 of xlo; FOLD8 starts from 8 lanes in ylo (AVX2, after adding the
// high half).
#define FOLD8(ylo, xlo, ytmp, xtmp) \
	VEXTRACTF128 $1, ylo, xtmp \
	VADDPS       xtmp, xlo, xlo \
	VMOVHLPS     xlo, xlo, xtmp \
	VADDPS       xtmp, xlo, xlo \
	VMOVSHDUP    xlo, xtmp \
	VADDSS       xtmp, xlo, xlo

#define FOLD16(lo, ylo, xlo, ytmp, xtmp) \
	VEXTRACTF64X4 $1, lo, ytmp \
	VADDPS        ytmp, ylo, ylo \
	FOLD8(ylo, xlo, ytmp, xtmp)
