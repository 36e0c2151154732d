//go:build goexperiment.simd && amd64

package cpu

import (
	"fmt"
	"math"
	"testing"

	"github.com/lily-engine/lily/internal/safetensors"
)

// laneCase draws an integer-GEMM case of width in and its lane records for recTile·laneQuadTokens
// token rows (the last ones zero: the padding the kernels read), the first tok of them filled.
func laneCase(t *testing.T, seed uint64, out, in, tok, n int) (*QMat, []float32, *limbRecords) {
	t.Helper()
	r := newRand(seed)
	m, x := randIntCase(r, out, in/512, tok)
	recs := new(limbRecords)
	recs.ensureLanes(tok, in)
	recs.zero(tok, recs.padded(tok))
	v := newVec(in, true)
	for tt := range tok {
		recs.fillLanes(tt, x[tt*in:(tt+1)*in], v, n)
	}
	return m, x, recs
}

// qmmLanesRef is the lane-group GEMM in plain Go for output row o and one token's lane record:
// per step and lane, the integer sum of nibble × digit over the first n limbs (Horner's rule by
// limbShift), converted to float32, times the lane's limb scale and the group's weight scale; plus
// the group's bias times the lane's group sum. With two rows a unit, row o reads the lanes of
// groups 0–7 (both halves of a record hold the same digits).
func qmmLanesRef(m *QMat, o int, rec []byte, n int) float32 {
	groups, rows := m.Groups(), laneRows(m.In)
	row := m.W[o*m.RowBytes() : (o+1)*m.RowBytes()]
	var y float32
	for st := range laneSteps(m.In, rows) {
		blk := rec[st*laneStepBytes : (st+1)*laneStepBytes]
		pat, sums := float32View(blk[lanePatOff:]), float32View(blk[laneSumOff:])
		for L := range 16 {
			g := laneGroup(L)
			if rows == 2 && g >= 8 {
				continue
			}
			gg := g + 16*st
			var acc int32
			for l := range n {
				acc <<= limbShift
				for k := range 8 {
					for b := range 4 {
						pb := row[gg*32+4*k+b]
						ev := int8(blk[1024*l+64*(2*k)+4*L+b])
						od := int8(blk[1024*l+64*(2*k+1)+4*L+b])
						acc += int32(pb&15)*int32(ev) + int32(pb>>4)*int32(od)
					}
				}
			}
			s := safetensors.BF16ToFloat32(m.Scales[o*groups+gg])
			bias := safetensors.BF16ToFloat32(m.Biases[o*groups+gg])
			y += float32(acc)*pat[L]*s + bias*sums[L]
		}
	}
	return y
}

// TestQMatMatLanesTile holds qmmLanes (weights transposed in registers) to qmmLanesRef for one and
// two limbs, one and two rows a unit (an odd last row of two), and every partial tile.
func TestQMatMatLanesTile(t *testing.T) {
	if !New(NewPool(1)).useLanes(2048) {
		t.Skip("no AVX-512 VNNI on this CPU: the lane-group GEMM is not used")
	}
	for _, in := range []int{512, 1024, 2048} {
		for n := 1; n <= 2; n++ {
			for ntok := 1; ntok <= recTile; ntok++ {
				t.Run(fmt.Sprintf("in%d/limbs%d/T%d", in, n, ntok), func(t *testing.T) {
					const out = 7
					m, x, recs := laneCase(t, uint64(in+n), out, in, ntok, n)
					y := make([]float32, ntok*out)
					qmmLanes(y, out, m, 0, out, recs.rec, recs.stride, n, ntok)
					for tt := range ntok {
						_, mass := oracleQMatVec(m, x[tt*in:(tt+1)*in])
						for o := range out {
							want := qmmLanesRef(m, o, recs.rec[tt*recs.stride:], n)
							if d := math.Abs(float64(y[tt*out+o] - want)); d > qmmIntTileTol*mass[o] {
								t.Fatalf("Y[%d,%d] = %g, qmmLanesRef %g", tt, o, y[tt*out+o], want)
							}
						}
					}
				})
			}
		}
	}
}

// TestQMatMatLanesQuad holds qmmLanesQuad (weights written out in lane order once, laneRepack) to
// qmmLanes bit for bit: the same integer sums and the same float32 operations in the same order.
func TestQMatMatLanesQuad(t *testing.T) {
	if !New(NewPool(1)).useLanes(2048) {
		t.Skip("no AVX-512 VNNI on this CPU: the lane-group GEMM is not used")
	}
	for _, in := range []int{512, 1024, 2048} {
		for ntok := 1; ntok <= laneQuadTokens; ntok++ {
			t.Run(fmt.Sprintf("in%d/T%d", in, ntok), func(t *testing.T) {
				rows := laneRows(in)
				out := 8 * rows // two quads
				m, _, recs := laneCase(t, uint64(in*ntok), out, in, ntok, qmmLimbs)
				want := make([]float32, ntok*out)
				qmmLanes(want, out, m, 0, out, recs.rec, recs.stride, qmmLimbs, ntok)
				steps := laneSteps(in, rows)
				ws := make([]byte, out/rows*steps*laneWBytes)
				laneRepack(ws, m, 0, out/rows)
				got := make([]float32, ntok*out)
				qmmLanesQuad(got, out, ws, steps, 2, recs.rec, recs.stride, qmmLimbs, ntok, rows)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("Y[%d,%d] = %g quad, %g tile", i/out, i%out, got[i], want[i])
					}
				}
			})
		}
	}
}

// TestLaneTranspose holds the records' vector transpose and digit sums to their plain-Go model, with the second
// half elsewhere (one row a unit) and the same as the first (two rows a unit).
func TestLaneTranspose(t *testing.T) {
	r := newRand(5)
	src := make([]byte, 8*limbBytes)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	for _, half := range []int{4 * limbBytes, 0} {
		want, got := make([]byte, 8*128), make([]byte, 8*128)
		var wantSums, gotSums [16]int32
		laneTransposePortable(want, 128, src, limbBytes, half, &wantSums)
		if !laneTranspose(got, 128, src, limbBytes, half, &gotSums) {
			t.Skip("no vector transpose in this build")
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("half %d: byte %d = %#x, want %#x", half, i, got[i], want[i])
			}
		}
		if gotSums != wantSums {
			t.Fatalf("half %d: digit sums %v, want %v", half, gotSums, wantSums)
		}
	}
}

// TestQMatMatLanesOrders holds the two orders of qmmLanesRows to each other bit for bit: a call
// whose records pass laneQuadOuterBytes (a row block written out, then every tile) against the
// same tokens in calls small enough for quad after quad; and the large call to the budget.
func TestQMatMatLanesOrders(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	k := intKernels(t, p, qmmLimbs, limbShift)
	const out, in, tok, part = 40, 4096, 70, 10
	if tok*laneSteps(in, 1)*laneStepBytes <= laneQuadOuterBytes || part*laneSteps(in, 1)*laneStepBytes > laneQuadOuterBytes {
		t.Fatal("the case no longer takes both orders")
	}
	m, x := randIntCase(newRand(11), out, in/512, tok)
	whole := make([]float32, tok*out)
	k.QMatMat(whole, m, x, tok)
	parts := make([]float32, tok*out)
	for t0 := 0; t0 < tok; t0 += part {
		k.QMatMat(parts[t0*out:], m, x[t0*in:], part)
	}
	for i := range whole {
		if math.Float32bits(whole[i]) != math.Float32bits(parts[i]) {
			t.Fatalf("Y[%d,%d] = %g in one call, %g in calls of %d", i/out, i%out, whole[i], parts[i], part)
		}
	}
	if bad, _ := qmmIntViolations(k, m, x, tok); bad > 0 {
		t.Fatalf("%d outputs over budget", bad)
	}
}
