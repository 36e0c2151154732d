package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestConvSiLUMatchesSteps: on every kernel set, ConvSiLU4 is bit for bit its steps through the
// public kernels (a cleared row, MulAdd of each tap in order, SiLU) at lengths around the 16-lane
// vectors; and it rejects a short tap.
func TestConvSiLUMatchesSteps(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	for name, k := range variants(p) {
		r := rand.New(rand.NewPCG(21, 22))
		for _, n := range []int{1, 15, 16, 37, 128, 4101} {
			t.Run(fmt.Sprintf("%s/n%d", name, n), func(t *testing.T) {
				var w, x [4][]float32
				for j := range 4 {
					w[j], x[j] = randVec(r, n+3), randVec(r, n+3) // longer than the row: only n read
					for i := range x[j] {
						x[j][i] *= 3
					}
				}
				got, want := make([]float32, n), make([]float32, n)
				for i := range got {
					got[i] = float32(math.NaN()) // whatever the row held is overwritten
				}
				k.ConvSiLU4(got, w, x)
				for j := range 4 {
					k.MulAdd(want, w[j], x[j])
				}
				k.SiLU(want, want)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("[%d] = %g, the steps %g", i, got[i], want[i])
					}
				}
			})
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: a tap shorter than the row did not panic", name)
				}
			}()
			short := [4][]float32{make([]float32, 8), make([]float32, 7), make([]float32, 8), make([]float32, 8)}
			k.ConvSiLU4(make([]float32, 8), short, short)
		}()
	}
}
