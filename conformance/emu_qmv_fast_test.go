package conformance

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/ref"
)

// The qmv_fast kernels (kernels/qmv_fast.metal, qmv_fast_moe.metal): 8 rows (2 SIMD groups × 4)
// per threadgroup of 64 threads; a SIMD group steps 512 (4-bit) or 256 (8-bit) columns at a time.
const (
	qfRows    = 8
	qfThreads = 64
)

// qmvKernel is the qmv_fast kernel for a bit width, with (add) or without the residual add.
func qmvKernel(bits int, add bool) string {
	if add {
		return fmt.Sprintf("qmv_add_%d", bits)
	}
	return fmt.Sprintf("qmv_%d", bits)
}

// runQMV runs qmv_<bits> (add: qmv_add_<bits>) on m bound with byte shifts sh: y [Out] (flat bytes,
// updated in place) = W x (+ y).
func runQMV(k kern, m *checkpoint.Matrix, x []float32, y []byte, add bool, sh [3]int) {
	bufs := map[int][]byte{3: f32(x), 4: y}
	bufs[5] = dims(m.Out, m.In, m.Bits, bindQShifted(bufs, 0, m, sh))
	k.run(qmvKernel(m.Bits, add), [3]int{ceil(m.Out, qfRows), 1, 1}, [3]int{qfThreads, 1, 1}, bufs)
	copy(y, bufs[4])
}

// qmvFastShapes are tiny and real mat-vec shapes with tails: rows not a multiple of 8 (nor of 4,
// one SIMD group's rows), K not a multiple of the 512- (4-bit) or 256-column (8-bit) step.
var qmvFastShapes = []shapeCase{
	{out: 1, in: 64, bits: 4}, {out: 3, in: 64, bits: 8}, {out: 37, in: 192, bits: 8}, {out: 9, in: 576, bits: 4},
	{out: 61, in: 320, bits: 8}, {out: 19, in: 4160, bits: 4},
	{out: 4103, in: 2048, bits: 4}, // the real in_proj_qkv (8,192 × 2,048) cut to a row tail
	{out: 2048, in: 4096, bits: 4}, // the real out_proj / o_proj
	{out: 257, in: 2048, bits: 8},  // the real router plus one row
	{out: 32, in: 2048, bits: 4},   // the real in_proj_b / in_proj_a
}

// testQMVFast: qmv_4/8 and qmv_add_4/8 against ref.MatVec at every shape, operands at every byte
// shift an unpadded shard allows (tolerance matvecTol).
func testQMVFast(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(21, 1))
	cases := append([]shapeCase(nil), qmvFastShapes...)
	for range 4 {
		cases = append(cases, shapeCase{out: 1 + rng.IntN(70), in: groupSize * (1 + rng.IntN(12)), bits: []int{4, 8}[rng.IntN(2)]})
	}
	for i, c := range cases {
		m := qmat(t, rng, "w", 0, c.out, c.in, c.bits)
		x, y0 := randVec(rng, c.in, 1), randVec(rng, c.out, 1)
		want := make([]float32, c.out)
		if err := ref.MatVec(&m, 0, x, want); err != nil {
			t.Fatal(err)
		}
		add := i%2 == 1
		y := zeros(c.out)
		if add {
			y = f32(y0)
			for j := range want {
				want[j] += y0[j]
			}
		}
		runQMV(k, &m, x, y, add, shiftCases[i%len(shiftCases)])
		near(t, fmt.Sprintf("%s %d×%d", qmvKernel(c.bits, add), c.out, c.in), unf32(y), want, matvecTol)
	}
}
