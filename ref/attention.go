package ref

import (
	"fmt"
	"github.com/lily-engine/lily/internal/rope"
	"math"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// KVCache holds one attention layer's post-norm, post-RoPE keys and values, one row per position.
type KVCache struct {
	K [][]float32 // [pos][Hkv·D]
	V [][]float32 // [pos][Hkv·D]
}

func (c *KVCache) clone() *KVCache { return &KVCache{K: cloneRows(c.K), V: cloneRows(c.V)} }

// RopeCosSin returns the rotary tables for one position, in transformers' float32 steps:
//
//	inv_freq[i] = 1 / θ^(2i/rot);  f_i = pos·inv_freq[i];  cos[i] = cos f_i, sin[i] = sin f_i
//
// for i in [0, rot/2), each step rounded to float32 as transformers does. → cos, sin: [rot/2].
func RopeCosSin(pos, rot int, theta float64) (cos, sin []float32) {
	t := rope.New(rot, theta)
	cos, sin = make([]float32, t.Half()), make([]float32, t.Half())
	t.CosSin(pos, cos, sin)
	return cos, sin
}

// ApplyRoPE rotates the first 2·len(cos) dims of one head in place with rotate-half (NeoX) pairing
// (model.md §4.4 step 4); the remaining dims are untouched:
//
//	x[i] = x[i]·cos_i − x[i+r/2]·sin_i;  x[i+r/2] = x[i+r/2]·cos_i + x[i]·sin_i   (i < r/2)
//
// x: [D]; cos, sin: [r/2].
func ApplyRoPE(x, cos, sin []float32) {
	half := len(cos)
	for i := 0; i < half; i++ {
		x1, x2 := x[i], x[i+half]
		x[i] = float32(x1*cos[i]) - float32(x2*sin[i])
		x[i+half] = float32(x2*cos[i]) + float32(x1*sin[i])
	}
}

// AttendHead is causal softmax attention of one query over the given keys and values:
//
//	s_j = (q·k_j)·scale;  p = softmax(s);  o = Σ_j p_j v_j
//
// q: [D]; keys, values: [N][D] (rows already restricted to the visible positions) → [D].
func AttendHead(q []float32, keys, values [][]float32, scale float32) []float32 {
	scores := make([]float32, len(keys))
	maxS := float32(math.Inf(-1))
	for j, kj := range keys {
		scores[j] = dot(q, kj) * scale
		maxS = max(maxS, scores[j])
	}
	var sum float64
	e := make([]float64, len(keys))
	for j, s := range scores {
		e[j] = math.Exp(float64(s - maxS))
		sum += e[j]
	}
	acc := make([]float64, len(q))
	for j, vj := range values {
		p := float32(e[j] / sum)
		for d, v := range vj {
			acc[d] += float64(p) * float64(v)
		}
	}
	out := make([]float32, len(q))
	for d := range out {
		out[d] = float32(acc[d])
	}
	return out
}

// GatedAttention is the token mixer of a full-attention layer (model.md §4.4) for T new tokens at
// positions pos..pos+T−1, appending their keys and values to cache:
//
//	[query_h | gate_h] = (W_q a)[h·2D : (h+1)·2D];  k = W_k a;  v = W_v a
//	query = RoPE(RMSNorm(query, q_norm));  k = RoPE(RMSNorm(k, k_norm))
//	o_h = softmax(query_h·K_{h/(Hq/Hkv)}ᵀ · D^−½, causal) V_{h/(Hq/Hkv)}
//	out = W_o (o ⊙ sigmoid(gate))
//
// a: [T][H] → [T][H].
func GatedAttention(cfg *checkpoint.Config, w *checkpoint.Attention, a [][]float32, pos int, cache *KVCache) ([][]float32, error) {
	hq, hkv, d := cfg.NumHeads, cfg.NumKVHeads, cfg.HeadDim
	if len(cache.K) != pos || len(cache.V) != pos {
		return nil, fmt.Errorf("attention %s: cache holds %d positions, want %d", w.Q.Name, len(cache.K), pos)
	}
	qg, err := Linear(&w.Q, 0, a) // [T][Hq·2D]
	if err != nil {
		return nil, err
	}
	k, err := Linear(&w.K, 0, a) // [T][Hkv·D]
	if err != nil {
		return nil, err
	}
	v, err := Linear(&w.V, 0, a) // [T][Hkv·D]
	if err != nil {
		return nil, err
	}
	scale := float32(1 / math.Sqrt(float64(d)))
	y := make([][]float32, len(a)) // [T][Hq·D]
	for t := range a {
		cos, sin := RopeCosSin(pos+t, cfg.RotaryDim(), cfg.RopeTheta)
		for h := 0; h < hkv; h++ {
			kh := k[t][h*d : (h+1)*d]
			RMSNorm(kh, kh, w.KNorm, cfg.RMSNormEps)
			ApplyRoPE(kh, cos, sin)
		}
		cache.K = append(cache.K, k[t])
		cache.V = append(cache.V, v[t])
		y[t] = make([]float32, hq*d)
		for h := 0; h < hq; h++ {
			query := qg[t][h*2*d : h*2*d+d]
			gate := qg[t][h*2*d+d : (h+1)*2*d]
			RMSNorm(query, query, w.QNorm, cfg.RMSNormEps)
			ApplyRoPE(query, cos, sin)
			g := h / (hq / hkv) // repeat_kv: query heads 8i..8i+7 read kv head i
			keys, values := make([][]float32, pos+t+1), make([][]float32, pos+t+1)
			for j := range keys {
				keys[j], values[j] = cache.K[j][g*d:(g+1)*d], cache.V[j][g*d:(g+1)*d]
			}
			o := AttendHead(query, keys, values, scale)
			for i := range o {
				y[t][h*d+i] = o[i] * Sigmoid(gate[i])
			}
		}
	}
	return Linear(&w.O, 0, y)
}
