package fast

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// TestVecsAgain: a dispatch that takes the previous one's last prepared input as it is gives what
// preparing it afresh gives, and an input it prepares itself never lands in the kept one's buffer
// (the kept input would then be read as the other).
func TestVecsAgain(t *testing.T) {
	ck, err := checkpoint.Open("../fixtures/models/tiny-a/mlx")
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	b, err := Open(ck.Weights, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m := b.(*Model)
	s := m.newSession()
	l := &m.layers[0]
	w0, w1 := l.gate[0], l.up[1]
	r := rand.New(rand.NewPCG(7, 8))
	vec := func() []float32 {
		x := make([]float32, w0.in)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	x1, x2, x3 := vec(), vec(), vec()
	want := func(w *mat, x []float32) []float32 {
		y := make([]float32, w.out)
		s.vecs([]vecJob{{w, x, y}})
		return y
	}
	w0x2, w1x3 := want(w0, x2), want(w1, x3)
	// x1, then x2 prepared last: vecsAgain reuses x2's buffer and prepares x3 in another.
	s.vecs([]vecJob{{w0, x1, make([]float32, w0.out)}, {w1, x2, make([]float32, w1.out)}})
	y2, y3 := make([]float32, w0.out), make([]float32, w1.out)
	s.vecsAgain([]vecJob{{w0, x2, y2}, {w1, x3, y3}})
	if !slices.Equal(y2, w0x2) || !slices.Equal(y3, w1x3) {
		t.Fatalf("vecsAgain: %v %v, want %v %v", y2[:4], y3[:4], w0x2[:4], w1x3[:4])
	}
}
