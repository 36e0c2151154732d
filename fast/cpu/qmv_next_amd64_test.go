//go:build goexperiment.simd && amd64

package cpu

import (
	"fmt"
	"math"
	"simd/archsimd"
	"testing"
)

// TestPassPlanTargets checks where qmvPasses's calls prefetch: for every pass p of n4 passes of m
// from row lo, the weights' far prefetch (the call's row bytes plus its pf) must land on m's bytes
// vnniPrefetch on while those are in the rows, and past them on the row the caller reads next
// (following), its own line where the rows end m with nothing next, or m's next rows as always;
// the scales' and biases' prefetch the same way, a line of each a block. A wrong offset costs
// only speed, so this is what keeps it honest.
func TestPassPlanTargets(t *testing.T) {
	r := newRand(5)
	for _, c := range []struct {
		bits, out, in, lo, n4 int
		next                  bool
		nextRow               int
	}{
		{4, 64, 2048, 0, 16, true, 0},      // a gathered expert whole, the next from its first row
		{4, 64, 2048, 16, 8, true, 24},     // a take's end mid-matrix, the next take's first block
		{4, 64, 2048, 0, 16, false, 0},     // the rows end m, nothing next: own lines
		{4, 64, 2048, 0, 8, false, 0},      // mid-matrix, nothing next: m's next rows
		{4, 64, 512, 0, 2, true, 0},        // fewer passes than the prefetch distance
		{4, 32, 4096, 8, 6, true, 8},       // one pass covers the distance twice
		{8, 32, 2048, 0, 8, true, 0},       // the 8-bit router
		{4, 64, 2048, 0, 16, true, 0 + 32}, // next far into another matrix
	} {
		t.Run(fmt.Sprintf("%d-bit_%dx%d_lo%d_n%d_next%v_%d", c.bits, c.out, c.in, c.lo, c.n4, c.next, c.nextRow), func(t *testing.T) {
			m := randQMat(r, c.bits, c.out, c.in)
			var f following
			if c.next {
				f.m, f.row = randQMat(r, 4, 64, 2048), c.nextRow
			}
			groups, rb := m.Groups(), m.RowBytes()
			pass, sbPass := 4*rb, 4*2*groups
			ahead := vnniPrefetch(rb) / pass
			body := passBody(m, c.lo, c.n4, f.known())
			calls := []passCall{passPlain(m, c.lo, body)}
			if body < c.n4 {
				next, row := f.resolve()
				calls = append(calls, passTail(m, c.lo, c.n4, body, next, row))
			}
			w0, s0 := addr(&m.W[c.lo*rb]), addr(&m.Scales[c.lo*groups])
			p := 0
			for _, call := range calls {
				if call.row != c.lo+4*p {
					t.Fatalf("a call starts at row %d, want %d", call.row, c.lo+4*p)
				}
				for i := 0; i < call.passes; i, p = i+1, p+1 {
					gw := w0 + p*pass + call.pf
					gs := s0 + p*sbPass + call.pfs
					gb := gs + call.pfb
					var ww, ws, wb int
					switch q := p + ahead; {
					case q < c.n4 || (!c.next && c.lo+4*c.n4 < m.Out):
						ww, ws = w0+q*pass, s0+q*sbPass
						wb = ws + addr(&m.Biases[0]) - addr(&m.Scales[0])
					case c.next:
						nm := f.m
						ng := c.nextRow * nm.Groups()
						ww = addr(&nm.W[c.nextRow*nm.RowBytes()]) + (q-c.n4)*pass
						ws = addr(&nm.Scales[ng]) + (q-c.n4)*sbPass
						wb = ws + addr(&nm.Biases[0]) - addr(&nm.Scales[0])
					default: // own lines
						ww, ws = w0+p*pass, s0+p*sbPass
						wb = ws + addr(&m.Biases[0]) - addr(&m.Scales[0])
					}
					if gw != ww || gs != ws || gb != wb {
						t.Fatalf("pass %d of %d: prefetches weights %+d, scales %+d, biases %+d from where they should",
							p, c.n4, gw-ww, gs-ws, gb-wb)
					}
				}
			}
			if p != c.n4 {
				t.Fatalf("the calls run %d passes, want %d", p, c.n4)
			}
		})
	}
}

// TestMatVecNextSameBits checks that the mat-vecs told a next read (split into the calls of
// passBody, passPlain and passTail) give every row the bits of the plain call, for 4- and 8-bit
// rows, over ranges that start and end anywhere on a row block.
func TestMatVecNextSameBits(t *testing.T) {
	if !archsimd.X86.AVX512VNNI() || !archsimd.X86.AVX512GFNI() || !archsimd.X86.AVX512VBMI() {
		t.Skip("the four-row VNNI mat-vecs need AVX-512 VNNI, GFNI and VBMI")
	}
	r := newRand(6)
	next := randQMat(r, 4, 64, 2048)
	for _, bits := range []int{4, 8} {
		for _, in := range []int{512, 2048} {
			m := randQMat(r, bits, 96, in)
			p := NewPool(1)
			v := New(p).NewVec(in)
			p.Close()
			v.Prepare(randVec(r, in))
			plain, nexted := qmv4RowsVNNI, qmv4RowsVNNINext
			if bits == 8 {
				plain, nexted = qmv8RowsVNNI, qmv8RowsVNNINext
			}
			for _, rg := range [][2]int{{0, 96}, {8, 96}, {0, 40}, {16, 24}, {88, 96}} {
				for _, f := range []following{{}, {m: next}, {m: next, row: 8}} {
					want, got := make([]float32, m.Out), make([]float32, m.Out)
					plain(want, m, v, rg[0], rg[1])
					nexted(got, m, v, rg[0], rg[1], f)
					for o := range want {
						if math.Float32bits(got[o]) != math.Float32bits(want[o]) {
							t.Fatalf("%d-bit [%d, %d] rows %v, next %v: y[%d] = %g, plain %g", bits, m.Out, in, rg, f.m != nil, o, got[o], want[o])
						}
					}
				}
			}
		}
	}
}
