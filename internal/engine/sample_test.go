package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// topIndices agrees with a full sort (value descending, id ascending, non-finite dropped), ties and
// infinities included.
func TestTopIndicesMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 500 {
		n := 1 + r.IntN(60)
		x := make([]float64, n)
		for i := range x {
			switch r.IntN(8) {
			case 0:
				x[i] = math.Inf(-1)
			case 1:
				x[i] = math.NaN()
			default:
				x[i] = float64(r.IntN(6)) // many ties
			}
		}
		k := 1 + r.IntN(n+2)
		var want []int32
		for i, v := range x {
			if v > math.Inf(-1) {
				want = append(want, int32(i))
			}
		}
		slices.SortStableFunc(want, func(a, b int32) int {
			switch {
			case x[a] > x[b]:
				return -1
			case x[a] < x[b]:
				return 1
			}
			return 0
		})
		want = want[:min(k, len(want))]
		if got := topIndices(x, k); !slices.Equal(got, want) {
			t.Fatalf("trial %d: x=%v k=%d: got %v, want %v", trial, x, k, got, want)
		}
	}
}

func TestArgmaxSkipsNaN(t *testing.T) {
	nan := float32(math.NaN())
	if got := argmax([]float32{nan, 1, 3, 3, nan}); got != 2 {
		t.Fatalf("argmax %d", got)
	}
}
