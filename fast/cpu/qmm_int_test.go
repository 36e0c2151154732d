//go:build goexperiment.simd && amd64

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/lily-engine/lily/internal/safetensors"
)

// qmmIntTileTol bounds |assembly tile − qmmRecRef| relative to Σ|terms|: both multiply the same
// exact integer sums by the same float32 factors and differ only in summation order.
const qmmIntTileTol = 1e-6

// lockedIntKernels is intKernels for a single-worker benchmark on a locked OS thread (so that
// thread CPU time is the work's); the caller defers the returned func.
func lockedIntKernels(b *testing.B) (*Kernels, func()) {
	runtime.LockOSThread()
	p := NewPool(1)
	return intKernels(b, p, qmmLimbs, limbShift), func() {
		p.Close()
		runtime.UnlockOSThread()
	}
}

// intKernels returns kernels with the integer GEMM reading n limbs with the given shift, or skips.
func intKernels(t testing.TB, p *Pool, n int, shift uint) *Kernels {
	k := New(p)
	if k.f.qmmTile == nil {
		t.Skip("no AVX-512 VNNI on this CPU: the integer GEMM is not used")
	}
	k.limbs, k.shift = n, shift
	return k
}

// limbError is the largest |x − x̂| of an activation read with n limbs, in units of its group's limb
// scale dl (d/65536): the rounding of L (1/2) plus the balanced digits left out (at most 128 units
// of each digit's weight: 128 for c, 128·256 for b).
func limbError(n int) float64 {
	e := 0.5
	w := 1.0
	for range 3 - n {
		e += 128 * w
		w *= 256
	}
	return e
}

// qmmIntBudget returns the budget of Y[tt, o] for the integer GEMM with n limbs:
// Σ_g dl_g·limbError(n)·Σ_{i∈g} |scale_g·q_i + bias_g| (the activations' rounding, weighted by the
// dequantized weights: the bias term multiplies the same x̂ as the scale term, recordSums, so the
// product is Σ w·x̂) plus the float32 tolerance qmmTol·mass. Counting |scale|·q alone, as when the
// bias term read the exact Σx, left out the bias's share: rapid found an output over that budget.
func qmmIntBudget(m *QMat, x []float32, o, n int, mass float64) float64 {
	var budget float64
	for g := range m.Groups() {
		scale := float64(safetensors.BF16ToFloat32(m.Scales[o*m.Groups()+g]))
		bias := float64(safetensors.BF16ToFloat32(m.Biases[o*m.Groups()+g]))
		var amax, ws float64
		for i := g * GroupSize; i < (g+1)*GroupSize; i++ {
			amax = math.Max(amax, math.Abs(float64(x[i])))
			ws += math.Abs(scale*oracleQ(m, o, i) + bias)
		}
		dl, _ := limbScaleOf(amax)
		budget += float64(dl) * limbError(n) * ws
	}
	return budget + qmmTol*mass
}

// qmmIntViolations runs k.QMatMat and returns how many outputs break the budget of qmmLimbs limbs,
// and the worst |Y − oracle| relative to the rms output.
func qmmIntViolations(k *Kernels, m *QMat, x []float32, tok int) (bad int, worst float64) {
	y := make([]float32, tok*m.Out)
	k.QMatMat(y, m, x, tok)
	for tt := range tok {
		xr := x[tt*m.In : (tt+1)*m.In]
		want, mass := oracleQMatVec(m, xr)
		rms := rmsOf(want)
		for o := range m.Out {
			d := math.Abs(float64(y[tt*m.Out+o]) - want[o])
			worst = math.Max(worst, d/rms)
			if d > qmmIntBudget(m, xr, o, qmmLimbs, mass[o]) {
				bad++
			}
		}
	}
	return bad, worst
}

// randIntCase draws a 4-bit matrix of whole 8-group blocks and tok token rows with an outlier each
// (an outlier sets its group's limb scale).
func randIntCase(r *rand.Rand, out, blocks, tok int) (*QMat, []float32) {
	in := 8 * GroupSize * blocks
	m, x := randQMat(r, 4, out, in), randVec(r, tok*in)
	for tt := range tok {
		x[tt*in+r.IntN(in)] *= 50
	}
	return m, x
}

// TestQMatMatIntBudget holds the integer GEMM (qmmLimbs limbs) to its budget: odd row counts
// (a last row alone), token counts that leave a partial tile, several row blocks and workers.
func TestQMatMatIntBudget(t *testing.T) {
	for _, workers := range []int{1, 2} {
		p := NewPool(workers)
		defer p.Close()
		k := intKernels(t, p, qmmLimbs, limbShift)
		var worst float64
		rapid.Check(t, func(rt *rapid.T) {
			out := rapid.OneOf(rapid.IntRange(1, 9), rapid.IntRange(30, 70)).Draw(rt, "out")
			blocks := rapid.IntRange(1, 5).Draw(rt, "blocks")
			tok := rapid.OneOf(rapid.IntRange(1, 11), rapid.IntRange(laneQuadMinTokens, 2*laneQuadMinTokens+5)).Draw(rt, "T")
			m, x := randIntCase(newRand(rapid.Uint64().Draw(rt, "seed")), out, blocks, tok)
			bad, w := qmmIntViolations(k, m, x, tok)
			worst = math.Max(worst, w)
			if bad > 0 {
				rt.Fatalf("workers %d [%d,%d] T %d: %d outputs over budget", workers, out, m.In, tok, bad)
			}
		})
		t.Logf("workers %d: largest |Y − oracle| / rms(Y): %.2e", workers, worst)
	}
}

// TestQMatMatIntMutations checks that the budget test catches a broken integer GEMM: a dropped limb
// (one limb read where qmmLimbs are budgeted). The limb weight is the assembly's immediate shift:
// TestQMatMatIntTile's plain-Go model pins it (it fails when the tile shifts by 7).
func TestQMatMatIntMutations(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	for _, mut := range []struct {
		name  string
		n     int
		shift uint
	}{{"dropped limb", qmmLimbs - 1, limbShift}} {
		k := intKernels(t, p, mut.n, mut.shift)
		m, x := randIntCase(newRand(9), 40, 4, 9)
		if bad, _ := qmmIntViolations(k, m, x, 9); bad == 0 {
			t.Errorf("%s: every output within the budget", mut.name)
		}
	}
}

// TestQMatMatIntWidths alternates input widths on one Kernels, as an MoE layer does (gate and up
// read the hidden size, down the expert width): each call keeps its budget, and the preparation's
// scratch is kept per width, not reallocated per call.
func TestQMatMatIntWidths(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	k := intKernels(t, p, qmmLimbs, limbShift)
	r := newRand(4)
	for i, blocks := range []int{4, 1, 4, 1, 2} {
		m, x := randIntCase(r, 33, blocks, 7)
		if bad, _ := qmmIntViolations(k, m, x, 7); bad > 0 {
			t.Fatalf("call %d (In %d): %d outputs over budget", i, m.In, bad)
		}
	}
	if len(k.lvecs) != 3 {
		t.Fatalf("scratch for %d widths, want 3", len(k.lvecs))
	}
	m, x := randIntCase(r, 33, 4, 7)
	y := make([]float32, 7*33)
	if a := testing.AllocsPerRun(5, func() { k.QMatMat(y, m, x, 7) }); a != 0 {
		t.Errorf("QMatMat allocates %v times a call once warm", a)
	}
}

// TestQMatMatIntTile holds the assembly tile to its plain-Go model, qmmRecRef, for 1, 2 and 3 limbs.
func TestQMatMatIntTile(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	for n := 1; n <= 3; n++ {
		k := intKernels(t, p, n, limbShift)
		t.Run(fmt.Sprint(n, " limbs"), func(t *testing.T) {
			r := newRand(uint64(n))
			const out, tok = 7, 6
			m, x := randIntCase(r, out, 3, tok)
			y := make([]float32, tok*out)
			k.QMatMat(y, m, x, tok)
			rec := k.recs.rec
			for tt := range tok {
				_, mass := oracleQMatVec(m, x[tt*m.In:(tt+1)*m.In])
				for o := range out {
					want := qmmRecRef(m, o, rec[tt*k.recs.stride:], n, limbShift)
					if d := math.Abs(float64(y[tt*out+o] - want)); d > qmmIntTileTol*mass[o] {
						t.Fatalf("Y[%d,%d] = %g, qmmRecRef %g", tt, o, y[tt*out+o], want)
					}
				}
			}
		})
	}
}

// qmmRecRef is the integer GEMM in plain Go, instruction for instruction what the assembly tile
// computes for one output row o and one token record: per pair of groups, the integer sum of q·L
// over the first n limbs (Horner's rule with the given shift), converted to float32, times the
// multiplier pattern and the weight scale; plus Σ bias·Σx per block. Tests hold the assembly to it
// and both to the float oracle's budget.
func qmmRecRef(m *QMat, o int, rec []byte, n int, shift uint) float32 {
	groups := m.Groups()
	row := m.W[o*m.RowBytes() : (o+1)*m.RowBytes()]
	var lanes [16]float32
	for b := range groups / 8 {
		blk := rec[b*recBlockBytes : (b+1)*recBlockBytes]
		sums := float32View(blk[recSumOff:])
		for j := range 8 {
			lanes[j] += safetensors.BF16ToFloat32(m.Biases[o*groups+8*b+j]) * sums[j]
		}
		for p := range 4 {
			pair := 4*b + p
			dst := blk[p*recPairBytes : (p+1)*recPairBytes]
			limb := func(i int) []int8 { return bytesInt8(dst[i*64 : (i+1)*64]) }
			pat := float32View(dst[limbBytes:])
			packed := row[pair*64 : (pair+1)*64]
			for lane := range 16 {
				var acc int32
				for l := range n {
					acc <<= shift
					ev, od := limb(2*l), limb(2*l+1)
					for k := range 4 {
						pb := packed[4*lane+k]
						acc += int32(pb&15)*int32(ev[4*lane+k]) + int32(pb>>4)*int32(od[4*lane+k])
					}
				}
				s := safetensors.BF16ToFloat32(m.Scales[o*groups+2*pair+lane/8])
				lanes[lane] += float32(acc) * pat[lane] * s
			}
		}
	}
	var y float32
	for _, e := range lanes {
		y += e
	}
	return y
}

// BenchmarkQMatMatInt compares the integer GEMM ("int", qmmLimbs limbs) with the float32 512-bit
// GEMM ("f32") it replaces where the CPU has AVX-512 VNNI, and with itself one tile per assembly
// call ("int_tile": no row loop in assembly), on one worker (the calling goroutine, its OS thread
// locked: no pool wake-ups, so the ratio is the kernels' own on a shared machine), at expert shapes
// with few rows (T8: 256 tokens × top-8 of 256 experts) and more, and a dense projection. GFLOP/s
// is 2·T·Out·In per call; GFLOP/s-cpu the same per second of the thread's CPU time (what other
// processes on a shared machine change little). The integer GEMM's time includes preparing the
// token rows' limbs.
func BenchmarkQMatMatInt(b *testing.B) {
	for _, sh := range []struct {
		name    string
		out, in int
		t       int
	}{
		{"q4_512x2048_gate", 512, 2048, 8}, {"q4_512x2048_gate", 512, 2048, 64},
		{"q4_2048x512_down", 2048, 512, 8}, {"q4_2048x512_down", 2048, 512, 64},
		{"q4_2048x2048_dense", 2048, 2048, 64}, {"q4_2048x2048_dense", 2048, 2048, 256},
	} {
		for _, impl := range []string{"int", "int_pairs", "int_tile", "f32"} {
			b.Run(fmt.Sprintf("%s/T%d/w1/%s", sh.name, sh.t, impl), func(b *testing.B) {
				k, done := lockedIntKernels(b)
				defer done()
				switch impl {
				case "f32":
					k = newKernels(k.pool, simdImpl(level512), true)
				case "int_pairs":
					k.noLanes = true
				case "int_tile":
					k.f.qmmTileRows, k.noLanes = nil, true
				}
				r := rand.New(rand.NewPCG(3, 3))
				m, x := randQMat(r, 4, sh.out, sh.in), randVec(r, sh.t*sh.in)
				y := make([]float32, sh.t*sh.out)
				start, c0 := time.Now(), threadCPU()
				for b.Loop() {
					k.QMatMat(y, m, x, sh.t)
				}
				flops := 2 * float64(sh.t*sh.out*sh.in) * float64(b.N) / 1e9
				b.ReportMetric(flops/time.Since(start).Seconds(), "GFLOP/s")
				b.ReportMetric(flops/(threadCPU()-c0).Seconds(), "GFLOP/s-cpu")
			})
		}
	}
}

// BenchmarkQMatMatIntFewRows compares, for an expert that only a few token rows chose (its gate and
// down shapes), the integer GEMM ("int", on the kernel it picks for the row count), the 2-group tile
// alone ("int_pairs") and one VNNI mat-vec per row ("vecs", each row's Vec prepared in the loop as
// the engine does): the crossovers are matMatMinRowsInt and pairTileTokens. One worker, weights
// warm in cache.
func BenchmarkQMatMatIntFewRows(b *testing.B) {
	for _, sh := range []struct {
		name    string
		out, in int
	}{{"gate", 512, 2048}, {"down", 2048, 512}} {
		out, in := sh.out, sh.in
		for _, t := range []int{1, 2, 3, 4, 6} {
			for _, impl := range []string{"int", "int_pairs", "vecs"} {
				b.Run(fmt.Sprintf("%s/T%d/%s", sh.name, t, impl), func(b *testing.B) {
					p := NewPool(1)
					defer p.Close()
					k := intKernels(b, p, qmmLimbs, limbShift)
					k.noLanes = impl == "int_pairs"
					r := rand.New(rand.NewPCG(3, 3))
					m, x := randQMat(r, 4, out, in), randVec(r, t*in)
					y := make([]float32, t*out)
					v := k.NewVec(in)
					for b.Loop() {
						if impl != "vecs" {
							k.QMatMat(y, m, x, t)
							continue
						}
						for tt := range t {
							v.Prepare(x[tt*in : (tt+1)*in])
							k.QMatVec(y[tt*out:(tt+1)*out], m, v)
						}
					}
				})
			}
		}
	}
}

// TestQMatMatsMatchQMatMat: a batch sharing one X (QMatMats on the pool, QMatMatsOn on one worker)
// computes exactly what QMatMat does for each matrix alone: the same records and tiles, so the
// same bits (QMatMatsOn's single row: what QMatVec does). The batch mixes row counts, an 8-bit matrix (the float32 path), and token counts on
// both sides of the token blocking.
func TestQMatMatsMatchQMatMat(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	k := intKernels(t, p, qmmLimbs, limbShift)
	k.largeX, k.tokenBlock = 8*1024, 8 // token blocks from 8 tokens of width 1024
	r := newRand(5)
	const in = 1024
	mats := []*QMat{randQMat(r, 4, 40, in), randQMat(r, 4, 7, in), randQMat(r, 8, 16, in), randQMat(r, 4, 64, in)}
	for _, tok := range []int{1, 2, 5, 8, 19} {
		x := randVec(r, tok*in)
		var jobs, local []MatMat
		want := make([][]float32, len(mats))
		for i, m := range mats {
			want[i] = make([]float32, tok*m.Out)
			k.QMatMat(want[i], m, x, tok)
			jobs = append(jobs, MatMat{Y: make([]float32, tok*m.Out), M: m})
			if k.IntGEMM(m) {
				local = append(local, MatMat{Y: make([]float32, tok*m.Out), M: m})
			}
		}
		k.QMatMats(x, tok, jobs)
		k.QMatMatsOn(0, x, tok, local)
		wantOn := want
		if tok == 1 { // QMatMatsOn runs one row as the mat-vec
			wantOn = make([][]float32, len(mats))
			v := k.NewVec(in)
			v.Prepare(x)
			for i, m := range mats {
				wantOn[i] = make([]float32, m.Out)
				k.QMatVec(wantOn[i], m, v)
			}
		}
		li := 0
		for i, m := range mats {
			for j, v := range jobs[i].Y {
				if v != want[i][j] {
					t.Fatalf("T %d, matrix %d: QMatMats Y[%d] = %g, QMatMat %g", tok, i, j, v, want[i][j])
				}
			}
			if !k.IntGEMM(m) {
				continue
			}
			for j, v := range local[li].Y {
				if v != wantOn[i][j] {
					t.Fatalf("T %d, matrix %d: QMatMatsOn Y[%d] = %g, want %g", tok, i, j, v, wantOn[i][j])
				}
			}
			li++
		}
	}
}

// TestQMatMatIntStoresOnlyY: a last tile of fewer than recTile tokens stores only its own rows (the
// assembly writes through a pointer, so a store past Y would land in whatever follows it): Y sits
// in a larger buffer whose tail must stay untouched, for every token count of a partial tile, at
// one row a lane unit (1,024 inputs) and two (512).
func TestQMatMatIntStoresOnlyY(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	k := intKernels(t, p, qmmLimbs, limbShift)
	r := newRand(8)
	for tok := 1; tok <= 3*recTile+1; tok++ {
		blocks := 1 + tok%2 // in = 512·blocks
		m, x := randIntCase(r, 34, blocks, tok)
		buf := make([]float32, (tok+recTile)*m.Out)
		for i := range buf {
			buf[i] = 12345
		}
		k.QMatMat(buf[:tok*m.Out], m, x, tok)
		for i, v := range buf[tok*m.Out:] {
			if v != 12345 {
				t.Fatalf("T %d: element %d past Y overwritten with %g", tok, i, v)
			}
		}
		if bad, _ := qmmIntViolations(k, m, x, tok); bad > 0 {
			t.Fatalf("T %d: %d outputs over budget", tok, bad)
		}
	}
}

// TestQMatMatsGathered: an expert's product from the chunk's rows prepared once (TokenRecords,
// QMatMatsGathered) is bit for bit QMatMatsOn's from those rows gathered, for any subset of rows in
// any order (repeats too: a token never picks an expert twice, but nothing here depends on it), at
// the lane widths (512 and 2,048) and row counts on both sides of the quad tile's minimum; and it
// rejects a row outside the prepared ones.
func TestQMatMatsGathered(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	k := intKernels(t, p, qmmLimbs, limbShift)
	rapid.Check(t, func(rt *rapid.T) {
		in := rapid.SampledFrom([]int{512, 2048}).Draw(rt, "in")
		t := rapid.IntRange(2, 40).Draw(rt, "t")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 9))
		x := randVec(r, t*in)
		mats := []*QMat{randQMat(r, 4, rapid.SampledFrom([]int{16, 40, 64}).Draw(rt, "out"), in), randQMat(r, 4, 32, in)}
		var tr TokenRecords
		if !k.PrepareTokenRecords(&tr, x, t, in) {
			rt.Fatalf("PrepareTokenRecords refused width %d", in)
		}
		rows := rapid.SliceOfN(rapid.IntRange(0, t-1), 2, 20).Draw(rt, "rows")
		n := len(rows)
		xe := make([]float32, n*in)
		for i, row := range rows {
			copy(xe[i*in:(i+1)*in], x[row*in:(row+1)*in])
		}
		var got, want []MatMat
		for _, m := range mats {
			got = append(got, MatMat{Y: make([]float32, n*m.Out), M: m})
			want = append(want, MatMat{Y: make([]float32, n*m.Out), M: m})
		}
		k.QMatMatsGathered(0, &tr, rows, got)
		k.QMatMatsOn(0, xe, n, want)
		for i := range mats {
			for j := range want[i].Y {
				if math.Float32bits(got[i].Y[j]) != math.Float32bits(want[i].Y[j]) {
					rt.Fatalf("in %d, rows %v, matrix %d: Y[%d] = %g, gathered x %g", in, rows, i, j, got[i].Y[j], want[i].Y[j])
				}
			}
		}
		defer func() {
			if recover() == nil {
				rt.Fatalf("row %d of %d accepted", t, t)
			}
		}()
		k.QMatMatsGathered(0, &tr, []int{0, t}, got)
	})
}
