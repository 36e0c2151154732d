package cpu

import (
	"fmt"
	"testing"
)

// BenchmarkMoEDecode runs the mat-vecs of one MoE block of a decode step (model.md §4.5) the way a
// decode plan would: the 8-bit router [256, 2048] and shared-expert gate [1, 2048] in float32, then
// for 8 routed experts and the shared expert gate/up [512, 2048] and down [2048, 512] with int8
// activations (PrepareQ16 of the input once, of each SwiGLU output once). Expert weights cycle through
// benchColdBytes, so they come from DRAM. It reports weight GB/s and the fraction of the read
// bandwidth (paired rounds), the figure decode speed follows.
func BenchmarkMoEDecode(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("w%d", workers), func(b *testing.B) {
			p := NewPool(workers)
			defer p.Close()
			k := New(p)
			if !k.SIMD() {
				b.Skip("measures the SIMD decode path")
			}
			router, sgate := coldMats(8, 256, 2048)[0], coldMats(8, 1, 2048)[1]
			gu, down := coldMats(4, 512, 2048), coldMats(4, 2048, 512)
			x := randVec(newRand(5), 2048)
			vx, vh := NewVec(2048), NewVec(512)
			logits, gate, up := make([]float32, 256), make([]float32, 512), make([]float32, 512)
			out, acc, sg := make([]float32, 2048), make([]float32, 2048), make([]float32, 1)
			idx := make([]int, 8)
			var bytesPerStep int64
			next := 0
			step := func() {
				vx.PrepareQ16(x)
				k.QMatVec(logits, router, vx)
				k.Softmax(logits)
				k.TopK(idx, logits)
				k.QMatVec(sg, sgate, vx)
				clear(acc)
				for e := 0; e <= len(idx); e++ { // 8 routed experts, then the shared one
					// gu and down alias the same arena: down reads the half of it that gu is not reading.
					g, u, d := gu[next%len(gu)], gu[(next+1)%len(gu)], down[(next+len(down)/2)%len(down)]
					next += 2
					k.QMatVecQ16(gate, g, vx)
					k.QMatVecQ16(up, u, vx)
					k.SiLUMul(gate, gate, up)
					vh.PrepareQ16(gate)
					k.QMatVecQ16(out, d, vh)
					k.Axpy(acc, 0.125, out)
				}
			}
			qbytes := func(m *QMat) int64 { return int64(m.Out*m.RowBytes() + 4*m.Out*m.Groups()) }
			bytesPerStep = qbytes(router) + qbytes(sgate) + 9*(2*qbytes(gu[0])+qbytes(down[0]))
			b.SetBytes(bytesPerStep)
			for b.Loop() {
				step()
			}
			b.StopTimer()
			gbs, frac := rooflineFrac(k, func() int64 {
				n := max(1, passBytes/int(bytesPerStep))
				for range n {
					step()
				}
				return bytesPerStep * int64(n)
			})
			b.ReportMetric(gbs, "GB/s")
			b.ReportMetric(frac, "frac_bw")
		})
	}
}
