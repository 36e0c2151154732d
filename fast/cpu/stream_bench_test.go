package cpu

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// BenchmarkMatVecStream asks how close the 4-bit mat-vec comes to the machine's read when both
// cores stream weights from DRAM, the bound of a decode step and of a short prompt's experts. Each
// round runs, on 2 workers and one after another, the bandwidth roofline's read (readBandwidthBest,
// as lily bench measures it) and two mat-vec passes over the benchmark arena (256 MiB or more of
// weights, every call's matrix cold):
//
//   - long: 1,024-row [·, 2048] calls, 1 MiB of packed weights each, as many calls as tasks: the
//     kernel's own streaming, without a dispatch per matrix;
//   - experts: whole experts in shuffled order, one worker each, as a short prefill runs its
//     one-token experts (moeExperts): gate and up [512, 2048] against one prepared input, down
//     [2048, 512] against another;
//   - gathered: dispatches of 16 [512, 2048] matrices from scattered places (QMatVecs), as a
//     decode step's routed gate and up, against one [8192, 2048] of the same bytes a dispatch
//     (one): what a dispatch's matrix boundaries cost.
//
// The host's bandwidth moves by half within minutes; a ratio taken inside one round does not. It
// reports each pass's median over the rounds in GB/s (packed weights, scales and biases) and each
// mat-vec's median ratio to the read of its round (frac_read).
func BenchmarkMatVecStream(b *testing.B) {
	p := NewPool(2)
	defer p.Close()
	k := New(p)
	a := benchArena()
	buf := bwBuffer()
	long, longBytes := streamLong(k, a.w, a.sb)
	experts, expertBytes := streamExperts(k, a.w, a.sb)
	gathered, one, gatherBytes := streamGathered(k, a.w, a.sb)
	const rounds = 15
	var read, lg, ex, lgFrac, exFrac, gaFrac, oneFrac []float64
	for b.Loop() {
		read, lg, ex, lgFrac, exFrac, gaFrac, oneFrac = nil, nil, nil, nil, nil, nil, nil
		for range rounds {
			r := readBandwidthBest(p, k.f, buf, 1)
			l := timedGBs(longBytes, long)
			e := timedGBs(expertBytes, experts)
			read, lg, ex = append(read, r), append(lg, l), append(ex, e)
			lgFrac, exFrac = append(lgFrac, l/r), append(exFrac, e/r)
			gaFrac = append(gaFrac, timedGBs(gatherBytes, gathered)/r)
			oneFrac = append(oneFrac, timedGBs(gatherBytes, one)/r)
		}
	}
	b.ReportMetric(median(read), "read_GB/s")
	b.ReportMetric(median(lg), "long_GB/s")
	b.ReportMetric(median(lgFrac), "long_frac_read")
	b.ReportMetric(median(ex), "experts_GB/s")
	b.ReportMetric(median(exFrac), "experts_frac_read")
	b.ReportMetric(median(gaFrac), "gathered_frac_read")
	b.ReportMetric(median(oneFrac), "one_frac_read")
}

// timedGBs runs pass once and returns bytes/second in GB/s.
func timedGBs(bytes int64, pass func()) float64 {
	start := time.Now()
	pass()
	return float64(bytes) / time.Since(start).Seconds() / 1e9
}

// median returns the middle value of xs (the upper one of an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// streamLong returns a pass of 1,024-row [·, 2048] mat-vecs over w (scales and biases from sb), one
// pool task each, and the bytes it reads.
func streamLong(k *Kernels, w []byte, sb []uint16) (func(), int64) {
	const rows, in = 1024, 2048
	g := in / GroupSize
	n := min(len(w)/(rows*in/2), len(sb)/(2*rows*g))
	ms := make([]*QMat, n)
	for i := range ms {
		s := sb[2*i*rows*g:]
		ms[i] = &QMat{Bits: 4, Out: rows, In: in, W: w[i*rows*in/2 : (i+1)*rows*in/2], Scales: s[:rows*g], Biases: s[rows*g : 2*rows*g]}
	}
	v := k.NewVec(in)
	v.Prepare(randVec(newRand(7), in))
	ys := [][]float32{make([]float32, rows), make([]float32, rows)}
	t := taskOf(func(wk, lo, hi int) {
		for i := lo; i < hi; i++ {
			k.f.qmv4(ys[wk], ms[i], v, 0, rows)
		}
	})
	return func() { k.pool.RunTask(n, t) }, int64(n) * streamBytes(rows, in)
}

// streamExperts returns a pass over w as experts (gate, up: [512, 2048]; down: [2048, 512]) in
// shuffled order, one pool task each, and the bytes it reads.
func streamExperts(k *Kernels, w []byte, sb []uint16) (func(), int64) {
	const hs, is = 2048, 512
	per := 3 * hs * is / 2 // packed bytes of one expert
	pg := 3 * hs * is / GroupSize
	n := min(len(w)/per, len(sb)/(2*pg))
	type expert struct{ gate, up, down *QMat }
	es := make([]expert, n)
	for i := range es {
		ew, s := w[i*per:(i+1)*per], sb[2*i*pg:]
		mat := func(j, out, in int) *QMat {
			g := out * in / GroupSize
			sc := s[2*j*g:]
			return &QMat{Bits: 4, Out: out, In: in, W: ew[j*hs*is/2 : (j+1)*hs*is/2], Scales: sc[:g], Biases: sc[g : 2*g]}
		}
		es[i] = expert{mat(0, is, hs), mat(1, is, hs), mat(2, hs, is)}
	}
	rand.New(rand.NewPCG(8, 8)).Shuffle(n, func(i, j int) { es[i], es[j] = es[j], es[i] })
	type work struct {
		x, h *Vec
		g, u []float32
		y    []float32
	}
	ws := make([]work, k.pool.Workers())
	for i := range ws {
		ws[i] = work{k.NewVec(hs), k.NewVec(is), make([]float32, is), make([]float32, is), make([]float32, hs)}
		ws[i].x.Prepare(randVec(newRand(uint64(9+i)), hs))
		ws[i].h.Prepare(randVec(newRand(uint64(19+i)), is))
	}
	mv := func(y []float32, m *QMat, v *Vec, then *QMat) { // as QMatMatsOn runs one token
		if k.f.qmv4Next == nil {
			k.f.qmv4(y, m, v, 0, m.Out)
			return
		}
		k.f.qmv4Next(y, m, v, 0, m.Out, following{m: then})
	}
	t := taskOf(func(wk, lo, hi int) {
		x := &ws[wk]
		for i, e := range es[lo:hi] {
			var then *QMat // the next expert's gate in this take, as moeExperts hands it on
			if lo+i+1 < hi {
				then = es[lo+i+1].gate
			}
			mv(x.g, e.gate, x.x, e.up)
			mv(x.u, e.up, x.x, e.down)
			mv(x.y, e.down, x.h, then)
		}
	})
	return func() { k.pool.RunTaskGuided(n, t) }, int64(n) * (2*streamBytes(is, hs) + streamBytes(hs, is))
}

// streamGathered returns a pass of QMatVecs dispatches of 16 scattered [512, 2048] matrices each
// over w, a pass of the same bytes as one [8192, 2048] matrix a dispatch, and the bytes each reads.
func streamGathered(k *Kernels, w []byte, sb []uint16) (gathered, one func(), bytes int64) {
	const hs, is, per = 2048, 512, 16
	g := hs / GroupSize
	mb := is * hs / 2 // packed bytes of one [512, 2048]
	n := min(len(w)/mb, len(sb)/(2*is*g)) / per * per
	mat := func(i, k int) *QMat { // matrices i..i+k-1 of the arena as one
		s := sb[2*i*is*g:]
		return &QMat{Bits: 4, Out: k * is, In: hs, W: w[i*mb : (i+k)*mb], Scales: s[:k*is*g], Biases: s[k*is*g : 2*k*is*g]}
	}
	v := k.NewVec(hs)
	v.Prepare(randVec(newRand(7), hs))
	y := make([]float32, per*is)
	perm := rand.New(rand.NewPCG(3, 3)).Perm(n)
	dispatches := make([][]MatVec, n/per)
	for d := range dispatches {
		for j := range per {
			dispatches[d] = append(dispatches[d], MatVec{Y: y[j*is : (j+1)*is], M: mat(perm[d*per+j], 1), V: v})
		}
	}
	big := make([][]MatVec, n/per)
	for d := range big {
		big[d] = []MatVec{{Y: y, M: mat(d*per, per), V: v}}
	}
	run := func(ds [][]MatVec) func() {
		return func() {
			for _, jobs := range ds {
				k.QMatVecs(jobs)
			}
		}
	}
	return run(dispatches), run(big), int64(n) * streamBytes(is, hs)
}

// streamBytes is what a 4-bit [out, in] mat-vec reads: packed weights, bf16 scales and biases.
func streamBytes(out, in int) int64 { return int64(out*in/2 + 2*2*out*in/GroupSize) }
