//go:build goexperiment.simd && amd64

#include "textflag.h"

// func xinuse() (bits uint32, ok bool)
// Returns XGETBV(ECX=1), the XINUSE bitmap (bit 2: upper YMM halves in use; bits 6-7: upper ZMM
// halves and ZMM16-31 in use), when CPUID.(EAX=0DH,ECX=1):EAX bit 2 says the CPU has it.
TEXT ·xinuse(SB), NOSPLIT, $0-5
	MOVL $0x0D, AX
	MOVL $1, CX
	CPUID
	BTL $2, AX
	JCC none
	MOVL $1, CX
	BYTE $0x0F; BYTE $0x01; BYTE $0xD0 // XGETBV
	MOVL AX, bits+0(FP)
	MOVB $1, ok+4(FP)
	RET
none:
	MOVL $0, bits+0(FP)
	MOVB $0, ok+4(FP)
	RET


