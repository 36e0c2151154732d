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

// BenchmarkIssueRate measures how many 512-bit instructions of each kind one core issues per
// cycle (instr/cycle, against the scalar add chain's one per cycle: the clock, reported as GHz).
// It bounds the integer prefill GEMM: per pair of groups a 2-row × 4-token tile issues 32
// VPDPBUSD (two limbs), 8 VPSLLD, 8 VMULPS and 8 VFMADD231PS; where those share ports
// (instr/ns of a mix no higher than of VPDPBUSD alone) they add up. On Zen 4 VPDPBUSD, VFMADD231PS
// and VPSLLD by a register count share them; VPSLLD by an immediate mostly does not.
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
}
