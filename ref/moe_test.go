package ref

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// routeSumTol: the renormalised weights are float32 quotients of a float32 total, so their sum is
// 1 up to k float32 roundings.
const routeSumTol = 1e-6

func TestRouteProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e := rapid.IntRange(1, 64).Draw(rt, "experts")
		k := rapid.IntRange(1, e).Draw(rt, "k")
		logits := make([]float32, e)
		for i := range logits {
			// A small set of values makes ties common.
			logits[i] = float32(rapid.IntRange(-4, 4).Draw(rt, "logit")) / 2
		}
		idx, w, err := Route(logits, k)
		if err != nil {
			rt.Fatal(err)
		}
		var sum float64
		picked := map[int]bool{}
		for i, id := range idx {
			sum += float64(w[i])
			picked[id] = true
			if i > 0 && (logits[id] > logits[idx[i-1]] || (logits[id] == logits[idx[i-1]] && id < idx[i-1])) {
				rt.Fatalf("order: %v (logits %v)", idx, logits)
			}
		}
		if len(picked) != k || math.Abs(sum-1) > routeSumTol {
			rt.Fatalf("idx %v (distinct %d, want %d), weights sum %g", idx, len(picked), k, sum)
		}
		last := idx[k-1]
		for id := range logits {
			if picked[id] {
				continue
			}
			// Every unpicked expert scores lower, or ties the last pick with a higher id.
			if logits[id] > logits[last] || (logits[id] == logits[last] && id < last) {
				rt.Fatalf("expert %d (logit %g) left out while %v picked (logits %v)", id, logits[id], idx, logits)
			}
		}
	})
}

func TestRouteByHand(t *testing.T) {
	// Softmax of [0, ln 3, ln 3, ln 2] = [1, 3, 3, 2]/9; top-3 = ids 1, 2 (tie: lower id first), 3;
	// renormalised = [3, 3, 2]/8.
	logits := []float32{0, float32(math.Log(3)), float32(math.Log(3)), float32(math.Log(2))}
	idx, w, err := Route(logits, 3)
	if err != nil {
		t.Fatal(err)
	}
	if idx[0] != 1 || idx[1] != 2 || idx[2] != 3 {
		t.Errorf("idx = %v, want [1 2 3]", idx)
	}
	if d := maxAbsDiff(t, w, []float32{0.375, 0.375, 0.25}); d > 1e-7 {
		t.Errorf("w = %v, want [0.375 0.375 0.25]", w)
	}
	if _, _, err := Route(logits, 5); err == nil {
		t.Error("top-5 of 4 accepted")
	}
}
