package engine

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Sampling chooses how the next token is picked from the logits. The zero value is greedy decoding.
type Sampling struct {
	// Temperature ≤ 0 means greedy (argmax, lowest id on ties); the filters below then do nothing.
	Temperature float64
	// TopP keeps the smallest set of most likely tokens whose probability sums to at least TopP
	// (0 or ≥ 1: off).
	TopP float64
	// TopK keeps the K most likely tokens (0: off).
	TopK int
	// MinP drops tokens whose probability is below MinP times the most likely one's (0: off).
	MinP float64
	// Seed makes sampling reproducible when HasSeed is set; otherwise a random seed is drawn.
	Seed    uint64
	HasSeed bool
	// PresencePenalty is subtracted once from the logit of every token already generated;
	// FrequencyPenalty once per occurrence. Both apply to generated tokens only, not the prompt.
	PresencePenalty  float64
	FrequencyPenalty float64
}

// ModelDefaults is the sampling lily uses when a request leaves a field out: greedy, with the
// model's generation_config filters (top_k 20, top_p 0.95, model.md §1.3) ready for when a
// temperature is given.
func ModelDefaults() Sampling {
	return Sampling{TopK: 20, TopP: 0.95}
}

// Greedy reports whether s picks the argmax.
func (s Sampling) Greedy() bool { return s.Temperature <= 0 }

// stepOptions returns what each step must return for s to pick a token and, when logprobs is set,
// for the token's logprob and topLogprobs alternatives: the whole distribution when a penalty or a
// sampler without a top-k filter needs it, else the top-k and the greedy id.
func (s Sampling) stepOptions(logprobs bool, topLogprobs int) StepOptions {
	if s.PresencePenalty != 0 || s.FrequencyPenalty != 0 || (!s.Greedy() && s.TopK <= 0) {
		return StepOptions{Full: true}
	}
	var o StepOptions
	if !s.Greedy() {
		o.TopK = s.TopK
	}
	if logprobs {
		o.TopK = max(o.TopK, topLogprobs, 1)
	}
	return o
}

// sampler holds the per-request sampling state. One goroutine owns it.
type sampler struct {
	s      Sampling
	rng    *rand.Rand
	counts map[int32]int
	buf    []float64 // scratch: adjusted logits
	idx    []int32   // scratch: candidate ids
	vals   []float64 // scratch: candidate logits, parallel to idx
}

func newSampler(s Sampling) *sampler {
	seed := s.Seed
	if !s.HasSeed {
		seed = rand.Uint64()
	}
	return &sampler{
		s:      s,
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		counts: map[int32]int{},
	}
}

// observe records a generated token for the penalties.
func (sm *sampler) observe(id int32) { sm.counts[id]++ }

// pick returns the next token id from a step that returned what s.stepOptions asked for: the full
// logits when it has them, else its greedy id or a draw among its top ids. Both ways give the same
// token for the same logits and seed.
func (sm *sampler) pick(r *StepResult) int32 {
	if r.Logits != nil {
		return sm.pickFull(r.Logits)
	}
	if sm.s.Greedy() {
		return r.Greedy
	}
	idx, vals := sm.idx[:0], sm.vals[:0]
	for i := range min(sm.s.TopK, len(r.TopIDs)) {
		if l := float64(r.TopLogits[i]); l > math.Inf(-1) {
			idx, vals = append(idx, r.TopIDs[i]), append(vals, l)
		}
	}
	sm.idx, sm.vals = idx, vals
	if len(idx) == 0 {
		return r.Greedy
	}
	return sm.draw(idx, vals)
}

// pickFull returns the next token id for logits [V].
func (sm *sampler) pickFull(logits []float32) int32 {
	penal := sm.s.PresencePenalty != 0 || sm.s.FrequencyPenalty != 0
	if sm.s.Greedy() && !penal {
		return argmax(logits)
	}
	v := len(logits)
	if cap(sm.buf) < v {
		sm.buf = make([]float64, v)
	}
	x := sm.buf[:v]
	for i, l := range logits {
		x[i] = float64(l)
	}
	if penal {
		for id, n := range sm.counts {
			if int(id) < v {
				x[id] -= sm.s.PresencePenalty + sm.s.FrequencyPenalty*float64(n)
			}
		}
	}
	if sm.s.Greedy() {
		best := 0
		for i := range x {
			if x[i] > x[best] {
				best = i
			}
		}
		return int32(best)
	}
	// Candidates sorted by adjusted logit, descending (ties: lower id first); -Inf and NaN never.
	var idx []int32
	if k := sm.s.TopK; k > 0 && k < v {
		idx = topIndices(x, k)
	} else {
		idx = sm.idx[:0]
		for i := range x {
			if x[i] > math.Inf(-1) {
				idx = append(idx, int32(i))
			}
		}
		sm.idx = idx
		slices.SortFunc(idx, func(a, b int32) int {
			switch {
			case x[a] > x[b]:
				return -1
			case x[a] < x[b]:
				return 1
			}
			return int(a - b)
		})
	}
	if len(idx) == 0 {
		return argmax(logits)
	}
	vals := sm.vals[:0]
	for _, id := range idx {
		vals = append(vals, x[id])
	}
	sm.vals = vals
	return sm.draw(idx, vals)
}

// draw samples one of the candidates idx, whose adjusted logits vals are in descending order, after
// the temperature, top-p and min-p.
func (sm *sampler) draw(idx []int32, vals []float64) int32 {
	// Softmax at temperature over the candidates.
	t := sm.s.Temperature
	p := make([]float64, len(idx))
	m := vals[0] / t
	var sum float64
	for i, v := range vals {
		p[i] = math.Exp(v/t - m)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	n := len(idx)
	if tp := sm.s.TopP; tp > 0 && tp < 1 {
		var c float64
		for i := range p {
			c += p[i]
			if c >= tp {
				n = i + 1
				break
			}
		}
	}
	if mp := sm.s.MinP; mp > 0 {
		floor := mp * p[0]
		for i := 1; i < n; i++ {
			if p[i] < floor {
				n = i
				break
			}
		}
	}
	var total float64
	for i := 0; i < n; i++ {
		total += p[i]
	}
	r := sm.rng.Float64() * total
	for i := 0; i < n; i++ {
		r -= p[i]
		if r < 0 {
			return idx[i]
		}
	}
	return idx[n-1]
}

// topIndices returns the ids of the k largest finite values of x, largest first, lower id first on
// ties. One pass with a sorted window of k: the common case is a single compare against the
// window's smallest value.
func topIndices[F float32 | float64](x []F, k int) []int32 {
	best := make([]int32, 0, k+1)
	negInf := F(math.Inf(-1))
	thr := negInf
	for i, l := range x {
		if !(l > thr) && (len(best) == k || !(l > negInf)) {
			continue // not better than the window's smallest (or not finite)
		}
		// After the existing equal values: they have lower ids.
		pos := len(best)
		for pos > 0 && x[best[pos-1]] < l {
			pos--
		}
		best = slices.Insert(best, pos, int32(i))
		if len(best) > k {
			best = best[:k]
		}
		if len(best) == k {
			thr = x[best[k-1]]
		}
	}
	return best
}

// argmax returns the index of the first largest logit, ignoring NaNs unless all are NaN (then 0).
// The running maximum stays in a register.
func argmax(logits []float32) int32 {
	if len(logits) == 0 {
		return 0
	}
	best, bv := 0, logits[0]
	for i, l := range logits {
		if l > bv || (bv != bv && l == l) { // x != x: NaN
			best, bv = i, l
		}
	}
	return int32(best)
}

// TopLogprob is one alternative at a position.
type TopLogprob struct {
	ID      int32
	Logprob float64
}

// logprobs returns the log-probability of id under logits and, when k > 0, the k most likely tokens
// (highest first, lower id first on ties).
func logprobs(logits []float32, id int32, k int) (float64, []TopLogprob) {
	lse := LogSumExp(logits)
	lp := float64(logits[id]) - lse
	if k <= 0 {
		return lp, nil
	}
	best := topIndices(logits, min(k, len(logits)))
	top := make([]TopLogprob, len(best))
	for i, b := range best {
		top[i] = TopLogprob{ID: b, Logprob: float64(logits[b]) - lse}
	}
	return lp, top
}
