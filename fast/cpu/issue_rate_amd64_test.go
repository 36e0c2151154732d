//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"testing"
)

func issueAddChain(n int)
func issueDPBUSD(n int)
func issueFMA(n int)
func issueDPBUSDFMA(n int)
func issueDPBUSDShiftReg(n int)
func issueDPBUSDShiftImm(n int)
func issueDPBUSDCvt(n int, buf *byte)
func issueDPBUSDMul(n int, buf *byte)
func issueDPBUSDAddD(n int, buf *byte)
func issueDPBUSDAndD(n int, buf *byte)
func issueDPBUSDUnpck(n int, buf *byte)
func issueDPBUSDShuf(n int, buf *byte)
func issueDPBUSDPermPS(n int, buf *byte)
func issueDPBUSDPermT2D(n int, buf *byte)
func issueDPBUSDLoad(n int, buf *byte)
func issueDPBUSDStore(n int, buf *byte)

// BenchmarkIssueRate measures how many 512-bit instructions of each kind one core issues per
// cycle (instr/cycle, against the scalar add chain's one per cycle: the clock, reported as GHz).
// It bounds the integer prefill GEMM: per pair of groups a 2-row × 4-token tile issues 32
// VPDPBUSD (two limbs), 8 VPSLLD, 8 VMULPS and 8 VFMADD231PS; where those share ports
// (instr/ns of a mix no higher than of VPDPBUSD alone) they add up. On Zen 4 VPDPBUSD, VFMADD231PS
// and VPSLLD by a register count share them; VPSLLD by an immediate mostly does not. Beside
// VPDPBUSD on Zen 4 (the mixes' instr/ns against VPDPBUSD's alone): VMULPS and VPERMT2D take a
// whole slot; VCVTDQ2PS, VPADDD, VPANDD about a quarter, VPERMPS and VSHUFI64X2 0.4, VPUNPCKLDQ
// 0.55; a 512-bit load is free up to one a cycle, a 512-bit store costs about two slots.
func BenchmarkIssueRate(b *testing.B) {
	if !archsimd.X86.AVX512VNNI() {
		b.Skip("no AVX-512 VNNI")
	}
	const iters = 1 << 16
	run := func(name string, f func(int)) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				f(iters)
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(8*iters/ns, "instr/ns")
		})
	}
	run("addchain", issueAddChain)
	run("vpdpbusd", issueDPBUSD)
	run("vfmadd", issueFMA)
	run("vpdpbusd+vfmadd", issueDPBUSDFMA)
	run("vpdpbusd+vpslld_reg", issueDPBUSDShiftReg)
	run("vpdpbusd+vpslld_imm", issueDPBUSDShiftImm)
	buf := make([]byte, 256)
	runBuf := func(name string, f func(int, *byte)) { run(name, func(n int) { f(n, &buf[0]) }) }
	runBuf("vpdpbusd+vcvtdq2ps", issueDPBUSDCvt)
	runBuf("vpdpbusd+vmulps", issueDPBUSDMul)
	runBuf("vpdpbusd+vpaddd", issueDPBUSDAddD)
	runBuf("vpdpbusd+vpandd", issueDPBUSDAndD)
	runBuf("vpdpbusd+vpunpckldq", issueDPBUSDUnpck)
	runBuf("vpdpbusd+vshufi64x2", issueDPBUSDShuf)
	runBuf("vpdpbusd+vpermps", issueDPBUSDPermPS)
	runBuf("vpdpbusd+vpermt2d", issueDPBUSDPermT2D)
	runBuf("vpdpbusd+load", issueDPBUSDLoad)
	runBuf("vpdpbusd+store", issueDPBUSDStore)
}
