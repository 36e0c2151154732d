package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/lily-engine/lily/metal/budget"
)

const lseTol = budget.LSE // the budget and why: metal/budget

// logitsTopK runs logits_topk_part (partThreads threads per part, 16 logits each) and
// logits_topk_merge (mergeThreads threads) on x: ids, vals [k] and lse.
func logitsTopK(k kern, x []float32, topK, partThreads, mergeThreads int) (ids []int32, vals []float32, lse float32) {
	n := len(x)
	chunk := 16 * partThreads
	parts := ceil(n, chunk)
	d := dims(n, topK, chunk, parts)
	pids, pvals, pstat := zeros(parts*topK), zeros(parts*topK), zeros(2*parts)
	k.run("logits_topk_part", [3]int{parts, 1, 1}, [3]int{partThreads, 1, 1},
		map[int][]byte{0: f32(x), 1: pids, 2: pvals, 3: pstat, 4: d})
	bufs := map[int][]byte{0: pids, 1: pvals, 2: pstat, 3: zeros(topK), 4: zeros(topK), 5: zeros(1), 6: d}
	k.run("logits_topk_merge", [3]int{1, 1, 1}, [3]int{min(mergeThreads, 32*ceil(parts, 32)), 1, 1}, bufs)
	return uni32(bufs[3]), unf32(bufs[4]), unf32(bufs[5])[0]
}

// testLogitsTopK: the split top-k and log-sum-exp against a sort and a float64 sum: ties for first
// place across parts (the lower id first), parts shorter than k, k up to 64, the real vocabulary,
// NaN logits (ranked last), and part and merge threadgroups below 1,024 threads.
func testLogitsTopK(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(7, 1))
	for _, c := range []struct {
		n, k int
		nan  bool
	}{{1000, 1, false}, {5003, 10, false}, {64, 64, false}, {4096 + 3, 8, false}, {600, 64, false}, {248320, 8, false},
		{5003, 10, true}} {
		x := randVec(rng, c.n, 4)
		top := float32(math.Inf(-1))
		for _, v := range x {
			top = max(top, v)
		}
		x[c.n-1], x[3] = top+1, top+1 // a tie for first place: the lower id must come first
		if c.nan {
			x[50] = float32(math.NaN()) // ranks last
		}
		rank := func(v float32) float64 {
			if math.IsNaN(float64(v)) {
				return math.Inf(-1)
			}
			return float64(v)
		}
		order := make([]int, c.n)
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return rank(x[order[a]]) > rank(x[order[b]]) })
		m := x[order[0]]
		var z float64
		for _, v := range x {
			if !math.IsNaN(float64(v)) {
				z += math.Exp(float64(v - m))
			}
		}
		lse := float32(float64(m) + math.Log(z))
		for _, th := range [][2]int{{256, 1024}, {96, 64}, {32, 32}} { // 1,024 and pipelines that allow fewer
			ids, vals, gotLSE := logitsTopK(k, x, c.k, th[0], th[1])
			for j := 0; j < c.k; j++ {
				want := float32(rank(x[order[j]]))
				if int(ids[j]) != order[j] || vals[j] != want {
					t.Fatalf("n=%d threads %v top %d: id %d (%v), want %d (%v)", c.n, th, j, ids[j], vals[j], order[j], want)
				}
			}
			what := fmt.Sprintf("lse n=%d threads %v", c.n, th)
			if c.nan {
				// A NaN logit: the lse is NaN (the model is broken), not a number near the oracle's.
				if !math.IsNaN(float64(gotLSE)) {
					t.Fatalf("%s: %v with a NaN logit, want NaN", what, gotLSE)
				}
				continue
			}
			near(t, what, []float32{gotLSE}, []float32{lse}, lseTol)
		}
	}
}
