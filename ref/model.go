package ref

import (
	"errors"
	"fmt"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/trace"
)

// Model is the reference forward pass over one set of weights. It holds no sequence state and is
// safe for concurrent use; each Session holds one sequence.
type Model struct {
	w   *checkpoint.Weights
	cfg *checkpoint.Config
}

// New checks every tensor of w against w.Config (shapes and stored byte counts) and returns the model.
// The weights must stay valid (mapped) while the model is used.
func New(w *checkpoint.Weights) (*Model, error) {
	if w == nil || w.Config == nil {
		return nil, errors.New("ref: nil weights or config")
	}
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("ref: %w", err)
	}
	return &Model{w: w, cfg: w.Config}, nil
}

// Config returns the model's configuration.
func (m *Model) Config() *checkpoint.Config { return m.cfg }

// DecoderLayer is one decoder layer (model.md §4.1) on T new tokens, continuing the sequence in st:
//
//	h = h + Mixer(RMSNorm(h, input_layernorm));  h = h + MoE(RMSNorm(h, post_attention_layernorm))
//
// The mixer is GatedDeltaNet (chunked or recurrent) or GatedAttention at positions pos..pos+T−1.
// h: [T][H] → [T][H] (a new slice; h is not modified).
func (m *Model) DecoderLayer(l int, h [][]float32, st *State, chunked bool) ([][]float32, error) {
	return m.decoderLayer(l, h, st, chunked, nil)
}

// decoderLayer is DecoderLayer reporting its intermediates to obs when it is not nil.
func (m *Model) decoderLayer(l int, h [][]float32, st *State, chunked bool, obs trace.Observer) ([][]float32, error) {
	layer := &m.w.Layers[l]
	eps := m.cfg.RMSNormEps
	a := make([][]float32, len(h)) // [T][H]
	for t := range h {
		a[t] = make([]float32, len(h[t]))
		RMSNorm(a[t], h[t], layer.InputNorm, eps)
	}
	var r [][]float32
	var err error
	mixer := trace.DeltaNetOut
	if layer.Kind == checkpoint.LinearAttention {
		r, err = GatedDeltaNet(m.cfg, layer.DeltaNet, a, st.DeltaNet[l], chunked)
	} else {
		mixer = trace.AttentionOut
		r, err = GatedAttention(m.cfg, layer.Attn, a, st.Pos, st.KV[l])
	}
	if err != nil {
		return nil, fmt.Errorf("layer %d: %w", l, err)
	}
	out := make([][]float32, len(h))
	mm := make([]float32, m.cfg.HiddenSize)
	for t := range h {
		out[t] = make([]float32, len(h[t]))
		for i := range out[t] {
			out[t][i] = h[t][i] + r[t][i]
		}
		if obs != nil {
			pos := st.Pos + t
			observe(obs, trace.At(l, trace.InputNorm), pos, a[t])
			observe(obs, trace.At(l, mixer), pos, r[t])
			observe(obs, trace.At(l, trace.MixerResid), pos, out[t])
		}
		RMSNorm(mm, out[t], layer.PostNorm, eps)
		y, rt, err := moeBlock(m.cfg, &layer.MoE, mm)
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", l, err)
		}
		for i := range out[t] {
			out[t][i] += y[i]
		}
		if obs != nil {
			pos := st.Pos + t
			observe(obs, trace.At(l, trace.PostNorm), pos, mm)
			obs.Route(l, pos, 1, rt.logits, rt.idx, rt.w)
			observe(obs, trace.At(l, trace.MoEOut), pos, y)
			observe(obs, trace.At(l, trace.MoEResid), pos, out[t])
		}
	}
	return out, nil
}

// observe reports one position's row of point p to obs.
func observe(obs trace.Observer, p trace.Point, pos int, x []float32) { obs.Rows(p, pos, 1, x) }

// Logits is lm_head(RMSNorm(h, norm)) in float32 over the full padded vocab. h: [H] → [V].
func (m *Model) Logits(h []float32) ([]float32, error) {
	n := make([]float32, len(h))
	RMSNorm(n, h, m.w.FinalNorm, m.cfg.RMSNormEps)
	out := make([]float32, m.w.LMHead.Out)
	return out, MatVec(&m.w.LMHead, 0, n, out)
}
