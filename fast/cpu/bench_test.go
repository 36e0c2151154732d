package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/lily-engine/lily/internal/safetensors"
)

// benchColdBytes is how much distinct weight data a mat-vec benchmark cycles through: as much as the
// bandwidth buffer (at least 256 MiB, and twice the last-level cache), so every call reads its
// matrix from DRAM as a decode step does.
var benchColdBytes = bandwidthBytes()

// benchArena holds random packed bytes and valid bf16 scales/biases that benchmark matrices alias.
var benchArena = sync.OnceValue(func() (a struct {
	w  []byte
	sb []uint16
}) {
	r := rand.New(rand.NewPCG(1, 1))
	w, _, err := mapReadBytes(benchColdBytes) // in huge pages, as the checkpoint's weights are mapped
	if err != nil {
		panic(err)
	}
	a.w = w
	for i := 0; i < len(a.w); i += 8 {
		u := r.Uint64()
		for j := range 8 {
			a.w[i+j] = byte(u >> (8 * j))
		}
	}
	a.sb = make([]uint16, benchColdBytes/2) // valid bf16: dense weights, or scales and biases
	for i := range a.sb {
		a.sb[i] = safetensors.Float32ToBF16(float32(r.NormFloat64() * 0.02))
	}
	return a
})

// bwBuffer is the buffer the paired bandwidth passes read (as MeasureReadBandwidth's).
var bwBuffer = sync.OnceValue(func() []uint64 {
	buf, _, err := NewReadBuffer(bandwidthBytes())
	if err != nil {
		panic(err)
	}
	FillBandwidthBuffer(buf)
	return buf
})

// pairedRounds is how many times benchmarks alternate one pass of the kernel over its cold data with
// one streaming-read pass. On a shared machine the load changes from second to second; the best of
// each, taken from interleaved rounds, is the fairest ratio one run can give. The portable kernels,
// ten times slower, get fewer rounds.
func pairedRounds(k *Kernels) int {
	if k.SIMD() {
		return 9
	}
	return 2
}

// passBytes is how much weight data one timed pass of rooflineFrac reads. Passes continue cyclically
// through the benchColdBytes set, so the data they read was last touched most of that set earlier.
const passBytes = 32 << 20

// rooflineFrac alternates pass (which returns the weight bytes it read) with a read-bandwidth pass
// of the same size (passBytes, the next window of the bandwidth buffer) on k's pool, and returns the
// best kernel GB/s and its fraction of the best bandwidth. Equal sizes give both the same chance of
// catching a quiet moment on a shared machine.
func rooflineFrac(k *Kernels, pass func() int64) (gbs, frac float64) {
	buf := bwBuffer()
	win := passBytes / 8
	var bw float64
	for r := range pairedRounds(k) {
		start := time.Now()
		n := pass()
		gbs = max(gbs, float64(n)/time.Since(start).Seconds()/1e9)
		off := (r * win) % len(buf)
		bw = max(bw, readBandwidthBest(k.pool, k.f, buf[off:off+win], 1))
	}
	return gbs, gbs / bw
}

// coldMats returns enough [out, in] matrices aliasing the arena to cover benchColdBytes (at least 1),
// each with its own packed words, scales and biases.
func coldMats(bits, out, in int) []*QMat {
	a := benchArena()
	size := out * in * bits / 8
	n := max(1, benchColdBytes/size)
	ms := make([]*QMat, n)
	g := out * in / GroupSize
	for i := range ms {
		sb := a.sb[(2*i*g)%(len(a.sb)-2*g+1):]
		ms[i] = &QMat{Bits: bits, Out: out, In: in, W: a.w[i*size : (i+1)*size], Scales: sb[:g], Biases: sb[g : 2*g]}
	}
	return ms
}

func benchShapes() []struct {
	name          string
	bits, out, in int
} {
	return []struct {
		name          string
		bits, out, in int
	}{
		{"q4_2048x2048", 4, 2048, 2048},
		{"q4_512x2048", 4, 512, 2048},
		{"q4_2048x512_down", 4, 2048, 512},  // an expert down projection
		{"q4_2048x4096_out", 4, 2048, 4096}, // a DeltaNet output projection
		{"q4_8192x2048", 4, 8192, 2048},
		{"q8_256x2048_router", 8, 256, 2048},
		{"q4_lmhead_32768x2048", 4, 32768, 2048}, // 1/8 of the 248320-row lm_head
	}
}

// BenchmarkQMatVec times mat-vecs over matrices that do not fit the cache (MB/s from ns/op), then
// reports from paired rounds (rooflineFrac) the weight bytes read per second (packed words, scales
// and biases: GB/s) and that rate as a fraction of the streaming-read bandwidth of the same workers
// (frac_bw). Vec preparation (once per input vector) is not timed.
func BenchmarkQMatVec(b *testing.B) {
	for _, sh := range benchShapes() {
		for _, workers := range []int{1, 2} {
			for _, impl := range []string{"simd", "simd512", "portable", "simd_q16", "portable_q16"} {
				b.Run(fmt.Sprintf("%s/w%d/%s", sh.name, workers, impl), func(b *testing.B) {
					benchQMatVec(b, sh.bits, sh.out, sh.in, workers, impl)
				})
			}
		}
	}
}

func benchQMatVec(b *testing.B, bits, out, in, workers int, impl string) {
	p := NewPool(workers)
	defer p.Close()
	k := NewPortable(p)
	if impl == "simd" || impl == "simd512" || impl == "simd_q16" {
		if k = New(p); !k.SIMD() {
			b.Skip("no SIMD kernels in this build (GOEXPERIMENT=simd, amd64, AVX2+FMA)")
		}
		if impl == "simd512" { // the float32 512-bit kernel, without AVX-512 VNNI
			k = newKernels(p, simdImpl(level512), true)
		}
	}
	q16 := impl == "simd_q16" || impl == "portable_q16"
	if q16 && bits == 8 {
		b.Skip("8-bit matrices always use the float32 path")
	}
	ms := coldMats(bits, out, in)
	x := randVec(rand.New(rand.NewPCG(2, 2)), in)
	v := NewVec(in)
	v.PrepareQ16(x)
	y := make([]float32, out)
	bytes := int64(out*in*bits/8 + 2*2*out*in/GroupSize)
	b.SetBytes(bytes)
	for i := 0; b.Loop(); i++ {
		if q16 {
			k.QMatVecQ16(y, ms[i%len(ms)], v)
		} else {
			k.QMatVec(y, ms[i%len(ms)], v)
		}
	}
	b.StopTimer()
	next := 0
	gbs, frac := rooflineFrac(k, func() int64 {
		n := max(1, passBytes/int(bytes))
		for range n {
			if q16 {
				k.QMatVecQ16(y, ms[next], v)
			} else {
				k.QMatVec(y, ms[next], v)
			}
			next = (next + 1) % len(ms)
		}
		return bytes * int64(n)
	})
	b.ReportMetric(gbs, "GB/s")
	b.ReportMetric(frac, "frac_bw")
}

// BenchmarkBF16MatVec is BenchmarkQMatVec for dense bf16 [2048, 2048] matrices (HF layout).
func BenchmarkBF16MatVec(b *testing.B) {
	const out, in = 2048, 2048
	for _, workers := range []int{1, 2} {
		for _, impl := range []string{"simd", "portable"} {
			b.Run(fmt.Sprintf("bf16_%dx%d/w%d/%s", out, in, workers, impl), func(b *testing.B) {
				p := NewPool(workers)
				defer p.Close()
				k := NewPortable(p)
				if impl == "simd" {
					if k = New(p); !k.SIMD() {
						b.Skip("no SIMD kernels in this build")
					}
				}
				a := benchArena()
				ws := make([][]uint16, len(a.sb)/(out*in))
				for i := range ws {
					ws[i] = a.sb[i*out*in : (i+1)*out*in]
				}
				x := randVec(newRand(4), in)
				y := make([]float32, out)
				bytes := int64(2 * out * in)
				b.SetBytes(bytes)
				for i := 0; b.Loop(); i++ {
					k.BF16MatVec(y, ws[i%len(ws)], out, in, x)
				}
				b.StopTimer()
				next := 0
				gbs, frac := rooflineFrac(k, func() int64 {
					n := max(1, passBytes/int(bytes))
					for range n {
						k.BF16MatVec(y, ws[next], out, in, x)
						next = (next + 1) % len(ws)
					}
					return bytes * int64(n)
				})
				b.ReportMetric(gbs, "GB/s")
				b.ReportMetric(frac, "frac_bw")
			})
		}
	}
}

// BenchmarkReadBandwidth reports MeasureReadBandwidth with 1 and 2 workers.
func BenchmarkReadBandwidth(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("w%d", workers), func(b *testing.B) {
			var bw float64
			for b.Loop() {
				p := NewPool(workers)
				bw = MeasureReadBandwidth(p)
				p.Close()
			}
			b.ReportMetric(bw, "GB/s")
		})
	}
}

// BenchmarkQMatMat is the prefill product: T token rows against one 4-bit expert-sized matrix, and
// a chunk of 512 token rows against a dense projection, reported in GFLOP/s (2·T·Out·In per call).
// "simd" is New's kernel choice (the integer GEMM where the CPU has AVX-512 VNNI), "simd512" the
// float32 512-bit kernel, "simd256" the 256-bit kernels only, "simdRows" all 512 tokens in one pass
// (no token blocks past qmmLargeX).
func BenchmarkQMatMat(b *testing.B) {
	for _, sh := range []struct {
		name          string
		bits, out, in int
		ts            []int
		impls         []string
	}{
		{"q4_512x2048_gate", 4, 512, 2048, []int{8, 64}, []string{"simd", "simd512", "simd256", "portable"}},
		{"q4_2048x512_down", 4, 2048, 512, []int{8, 64}, []string{"simd", "simd512", "simd256", "portable"}},
		{"q4_2048x2048_dense", 4, 2048, 2048, []int{512}, []string{"simd", "simd512", "simdRows"}},
		{"q8_256x2048_router", 8, 256, 2048, []int{256}, []string{"simd", "simd256"}}, // prefill's router: float32
	} {
		for _, t := range sh.ts {
			for _, impl := range sh.impls {
				b.Run(fmt.Sprintf("%s/T%d/w2/%s", sh.name, t, impl), func(b *testing.B) {
					p := NewPool(2)
					defer p.Close()
					k := NewPortable(p)
					if impl != "portable" {
						if k = New(p); !k.SIMD() {
							b.Skip("no SIMD kernels in this build")
						}
						if impl == "simdRows" {
							k.largeX = math.MaxInt
						}
						if impl == "simd256" { // the 256-bit kernels only (the row-block tile4x2)
							k = newKernels(p, simdImpl(level256), true)
						}
						if impl == "simd512" { // the float32 512-bit kernel (no integer GEMM)
							k = newKernels(p, simdImpl(level512), true)
						}
					}
					r := rand.New(rand.NewPCG(3, 3))
					m, x := randQMat(r, sh.bits, sh.out, sh.in), randVec(r, t*sh.in)
					y := make([]float32, t*sh.out)
					start := time.Now()
					for b.Loop() {
						k.QMatMat(y, m, x, t)
					}
					b.ReportMetric(2*float64(t*sh.out*sh.in)*float64(b.N)/time.Since(start).Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkPeakFLOPs reports MeasurePeakFLOPs on 2 workers.
func BenchmarkPeakFLOPs(b *testing.B) {
	for _, impl := range []string{"simd", "portable"} {
		b.Run(impl, func(b *testing.B) {
			p := NewPool(2)
			defer p.Close()
			k := NewPortable(p)
			if impl == "simd" {
				if k = New(p); !k.SIMD() {
					b.Skip("no SIMD kernels in this build")
				}
			}
			var f float64
			for b.Loop() {
				f = MeasurePeakFLOPs(k, 300*time.Millisecond)
			}
			b.ReportMetric(f, "GFLOP/s")
		})
	}
}

// BenchmarkVecPrepare times the per-input-vector preparation of the decode mat-vecs for a
// 2048-element hidden state: every form (NewVec: group sums, the float32 kernels' orders, the VNNI
// kernel's limbs) and what the best kernels' own Vec holds (Kernels.NewVec: on AVX-512 VNNI the
// sums and the limbs).
func BenchmarkVecPrepare(b *testing.B) {
	x := randVec(newRand(1), 2048)
	p := NewPool(1)
	defer p.Close()
	for _, c := range []struct {
		name string
		v    *Vec
	}{{"all", NewVec(2048)}, {"kernels", New(p).NewVec(2048)}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.v.Prepare(x)
			}
		})
	}
}
