//go:build goexperiment.simd && amd64

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"simd/archsimd"
	"testing"
)

// BenchmarkQMMRowsVNNI times the integer GEMM's assembly alone, one block of qmmVNNIRows rows (or 2)
// against one 4-token tile of records, everything in L1/L2: the 2-row tile ("pairs",
// qmm4RowsVNNI) and the lane-group tile that transposes in registers ("lanes", qmmLanes), each on
// its own records; the kernels' own rate, without the records' preparation or the Go loops around
// them.
func BenchmarkQMMRowsVNNI(b *testing.B) {
	if !archsimd.X86.AVX512VNNI() {
		b.Skip("no AVX-512 VNNI")
	}
	for _, kernel := range []string{"pairs", "lanes"} {
		for _, in := range []int{512, 1024, 2048, 4096} {
			for _, out := range []int{2, qmmVNNIRows} {
				b.Run(fmt.Sprintf("%s/in%d/rows%d", kernel, in, out), func(b *testing.B) {
					r := rand.New(rand.NewPCG(3, 3))
					m, x := randQMat(r, 4, out, in), randVec(r, recTile*in)
					var recs limbRecords
					if kernel == "lanes" {
						recs.ensureLanes(recTile, in)
					} else {
						recs.ensure(recTile, in)
					}
					v := newVec(in, true)
					for t := range recTile {
						recs.fillAny(t, x[t*in:(t+1)*in], v, qmmLimbs)
					}
					y := make([]float32, recTile*out)
					for b.Loop() {
						if kernel == "lanes" {
							qmmLanes(y, out, m, 0, out, recs.rec, recs.stride, qmmLimbs, recTile)
						} else {
							qmm4RowsVNNI(y, out, m, 0, out/2, recs.rec, recs.stride, qmmLimbs, limbShift, recTile)
						}
					}
					flops := 2 * float64(recTile*out*in) * float64(b.N)
					b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkQMatMatIntCold runs the integer GEMM at an expert's shape with few token rows (T8, as
// in a 256-token prefill; T4, a call the lane GEMM runs in registers; T2, the 2-group tile's) over 256 different matrices
// (150 MB: the weights come from DRAM, as the routed experts' do in prefill) against one matrix
// (warm in cache): one worker.
func BenchmarkQMatMatIntCold(b *testing.B) {
	const out, in = 512, 2048
	for _, t := range []int{8, 4, 2} {
		for _, n := range []int{1, 256} {
			b.Run(fmt.Sprintf("T%d/mats%d", t, n), func(b *testing.B) {
				k, done := lockedIntKernels(b)
				defer done()
				r := rand.New(rand.NewPCG(3, 3))
				ms := make([]*QMat, n)
				for i := range ms {
					ms[i] = randQMat(r, 4, out, in)
				}
				x := randVec(r, t*in)
				y := make([]float32, t*out)
				i := 0
				for b.Loop() {
					k.QMatMat(y, ms[i%n], x, t)
					i++
				}
				b.ReportMetric(2*float64(t*out*in)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkQMatMatIntTail runs the integer GEMM at an expert's gate shape for token counts that
// leave a last tile of 1–3 tokens (an expert's rows in a short prompt), one worker, one warm matrix:
// GFLOP/s counts only the real tokens, so the padding of the last tile shows as a lower rate.
func BenchmarkQMatMatIntTail(b *testing.B) {
	const out, in = 512, 2048
	for _, t := range []int{5, 6, 7, 8, 9} {
		b.Run(fmt.Sprintf("T%d", t), func(b *testing.B) {
			k, done := lockedIntKernels(b)
			defer done()
			r := rand.New(rand.NewPCG(3, 3))
			m, x := randQMat(r, 4, out, in), randVec(r, t*in)
			y := make([]float32, t*out)
			for b.Loop() {
				k.QMatMat(y, m, x, t)
			}
			b.ReportMetric(2*float64(t*out*in)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkQMatMatIntBlocks runs the integer GEMM over a 256- or 1024-token prompt's rows at the
// dense input widths (2,048, the DeltaNet and attention output projections' 4,096, the shared
// expert's 512), one worker, in token blocks of 64, 128 or 256 (tb0: one block of all the tokens):
// the choice of tokenBlockFor. GFLOP/s-cpu on the thread's CPU time.
func BenchmarkQMatMatIntBlocks(b *testing.B) {
	for _, sh := range []struct{ out, in, t int }{{2048, 2048, 256}, {2048, 4096, 256}, {2048, 4096, 1024}, {2048, 512, 1024}} {
		for _, tb := range []int{64, 128, 256, 0} {
			b.Run(fmt.Sprintf("%dx%d/T%d/tb%d", sh.out, sh.in, sh.t, tb), func(b *testing.B) {
				k, done := lockedIntKernels(b)
				defer done()
				if tb == 0 {
					k.largeX = math.MaxInt
				} else {
					k.tokenBlock = tb / 2 // the integer GEMM's blocks are twice tokenBlock
				}
				r := rand.New(rand.NewPCG(3, 3))
				m, x := randQMat(r, 4, sh.out, sh.in), randVec(r, sh.t*sh.in)
				y := make([]float32, sh.t*sh.out)
				c0 := threadCPU()
				for b.Loop() {
					k.QMatMat(y, m, x, sh.t)
				}
				b.ReportMetric(2*float64(sh.t*sh.out*sh.in)*float64(b.N)/1e9/(threadCPU()-c0).Seconds(), "GFLOP/s-cpu")
			})
		}
	}
}
