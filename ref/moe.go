package ref

import (
	"fmt"
	"math"
	"sort"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// Route is the router of model.md §4.5 on one token's router logits:
//
//	p = softmax(logits) (float32, float64 sums);  idx = the k largest p, descending, ties to the lower id
//	w = p[idx] / Σ p[idx]   (always renormalised)
//
// logits: [E] → idx, w: [k].
func Route(logits []float32, k int) (idx []int, w []float32, err error) {
	if k <= 0 || k > len(logits) {
		return nil, nil, fmt.Errorf("router: top-%d of %d experts", k, len(logits))
	}
	p := Softmax(logits)
	order := make([]int, len(p))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return p[order[a]] > p[order[b]] })
	idx = order[:k:k]
	var sum float64
	for _, e := range idx {
		sum += float64(p[e])
	}
	total := float32(sum)
	w = make([]float32, k)
	for i, e := range idx {
		w[i] = p[e] / total
	}
	return idx, w, nil
}

// Softmax is exp(x_i − max) / Σ_j exp(x_j − max), with float64 sums, rounded to float32. x: [N] → [N].
func Softmax(x []float32) []float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	e := make([]float64, len(x))
	var sum float64
	for i, v := range x {
		e[i] = math.Exp(float64(v - m))
		sum += e[i]
	}
	out := make([]float32, len(x))
	for i := range out {
		out[i] = float32(e[i] / sum)
	}
	return out
}

// SwiGLU is one expert's MLP: down(silu(gate x) ⊙ up x), for expert e of stacked matrices (e = 0
// for the shared expert's plain matrices). x: [H] → [H].
func SwiGLU(gate, up, down *checkpoint.Matrix, e int, x []float32) ([]float32, error) {
	hg, hu := make([]float32, gate.Out), make([]float32, up.Out) // [I]
	if err := MatVec(gate, e, x, hg); err != nil {
		return nil, err
	}
	if err := MatVec(up, e, x, hu); err != nil {
		return nil, err
	}
	for i := range hg {
		hg[i] = SiLU(hg[i]) * hu[i]
	}
	out := make([]float32, down.Out)
	return out, MatVec(down, e, hg, out)
}

// MoEBlock is the sparse MoE block of model.md §4.5 for one token:
//
//	(idx, w) = Route(W_router m, k)
//	routed = Σ_{e ∈ idx, ascending id} w_e · SwiGLU_e(m)
//	out = routed + sigmoid(W_sg m) · SwiGLU_shared(m)
//
// m: [H] (post-attention-normed hidden) → [H].
func MoEBlock(cfg *checkpoint.Config, w *checkpoint.MoE, m []float32) ([]float32, error) {
	out, _, err := moeBlock(cfg, w, m)
	return out, err
}

// routing is one token's router decision: logits [E], chosen experts and their weights [k].
type routing struct {
	logits []float32
	idx    []int
	w      []float32
}

// moeBlock is MoEBlock, also returning the router's decision.
func moeBlock(cfg *checkpoint.Config, w *checkpoint.MoE, m []float32) ([]float32, routing, error) {
	logits := make([]float32, w.Router.Out) // [E]
	if err := MatVec(&w.Router, 0, m, logits); err != nil {
		return nil, routing{}, err
	}
	idx, weights, err := Route(logits, cfg.NumExpertsPerTok)
	if err != nil {
		return nil, routing{}, err
	}
	rt := routing{logits: logits, idx: idx, w: weights}
	// transformers adds expert outputs into a zero buffer in ascending expert id.
	byID := make([]int, len(idx))
	for i := range byID {
		byID[i] = i
	}
	sort.Slice(byID, func(a, b int) bool { return idx[byID[a]] < idx[byID[b]] })
	out := make([]float32, len(m))
	for _, i := range byID {
		he, err := SwiGLU(&w.Gate, &w.Up, &w.Down, idx[i], m)
		if err != nil {
			return nil, rt, err
		}
		for j := range out {
			out[j] += float32(he[j] * weights[i])
		}
	}
	shared, err := SwiGLU(&w.SharedGate, &w.SharedUp, &w.SharedDown, 0, m)
	if err != nil {
		return nil, rt, err
	}
	sg := make([]float32, 1)
	if err := MatVec(&w.SharedEG, 0, m, sg); err != nil {
		return nil, rt, err
	}
	gate := Sigmoid(sg[0])
	for j := range out {
		out[j] += float32(gate * shared[j])
	}
	return out, rt, nil
}
