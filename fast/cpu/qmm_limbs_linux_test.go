package cpu

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// BenchmarkLimbRecordsFill times one token row's record at the model's input widths (2048: the
// projections of the hidden state, 512: an expert's down projection), "ref" the straightforward
// algorithm and "fill" the engine's, on the benchmark's locked thread; ns-cpu/row is that thread's
// CPU time per row (what other processes on a shared machine change little).
func BenchmarkLimbRecordsFill(b *testing.B) {
	for _, in := range []int{2048, 512} {
		for _, impl := range []string{"ref", "fill", "portable"} {
			b.Run(fmt.Sprintf("in%d/%s", in, impl), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				r := rand.New(rand.NewPCG(5, 5))
				const rows = 16
				x := randVec(r, rows*in)
				var rr limbRecords
				rr.ensure(rows, in)
				v := NewVec(in)
				c0 := threadCPU()
				for b.Loop() {
					for t := range rows {
						xs, rec := x[t*in:(t+1)*in], rr.rec[t*rr.stride:(t+1)*rr.stride]
						switch impl {
						case "ref":
							fillRecordRef(rec, xs, v, rr.blocks, qmmLimbs)
						case "fill":
							rr.fill(t, xs, v, qmmLimbs)
						case "portable":
							rr.fillPortable(rec, xs, v, qmmLimbs)
						}
					}
				}
				b.ReportMetric(float64((threadCPU()-c0).Nanoseconds())/float64(b.N*rows), "ns-cpu/row")
			})
		}
	}
}
