#include "textflag.h"

// func prefetchRows(p unsafe.Pointer, rows, strideBytes, rowBytes int)
//
// PREFETCHT0 on every 64-byte line of rows rows of rowBytes bytes, the
// first at p and each strideBytes after the one before.
TEXT ·prefetchRows(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ rows+8(FP), CX
	MOVQ strideBytes+16(FP), DX
	MOVQ rowBytes+24(FP), R8

row:
	LEAQ (SI)(R8*1), R9 // the row's end
	MOVQ SI, AX
	ANDQ $-64, AX       // its first line

line:
	PREFETCHT0 (AX)
	ADDQ       $64, AX
	CMPQ       AX, R9
	JLT        line
	ADDQ       DX, SI
	DECQ       CX
	JNZ        row
	RET
