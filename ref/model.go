package ref

import (
	"errors"
	"fmt"

	"github.com/lily-engine/lily/internal/checkpoint"
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
	if err := validate(w); err != nil {
		return nil, fmt.Errorf("ref: %w", err)
	}
	return &Model{w: w, cfg: w.Config}, nil
}

// Config returns the model's configuration.
func (m *Model) Config() *checkpoint.Config { return m.cfg }

// validate checks the config's derived sizes and every layer's tensors.
func validate(w *checkpoint.Weights) error {
	c := w.Config
	for _, d := range []struct {
		name string
		v    int
	}{{"hidden_size", c.HiddenSize}, {"num_hidden_layers", c.NumLayers}, {"vocab_size", c.VocabSize},
		{"num_experts", c.NumExperts}, {"num_experts_per_tok", c.NumExpertsPerTok},
		{"moe_intermediate_size", c.MoEIntermediate}, {"shared_expert_intermediate_size", c.SharedIntermediate}} {
		if d.v <= 0 {
			return fmt.Errorf("config %s = %d, want > 0", d.name, d.v)
		}
	}
	if c.NumExpertsPerTok > c.NumExperts {
		return fmt.Errorf("config num_experts_per_tok %d > num_experts %d", c.NumExpertsPerTok, c.NumExperts)
	}
	if c.MaxPositionEmbeddings <= 0 {
		return fmt.Errorf("config max_position_embeddings = %d, want > 0", c.MaxPositionEmbeddings)
	}
	if c.RMSNormEps <= 0 {
		return fmt.Errorf("config rms_norm_eps = %g, want > 0", c.RMSNormEps)
	}
	if len(c.LayerTypes) != c.NumLayers || len(w.Layers) != c.NumLayers {
		return fmt.Errorf("config has %d layers and %d layer types; weights have %d layers", c.NumLayers, len(c.LayerTypes), len(w.Layers))
	}
	h := c.HiddenSize
	if err := checkShape(&w.Embed, 0, c.VocabSize, h); err != nil {
		return err
	}
	if err := checkShape(&w.LMHead, 0, c.VocabSize, h); err != nil {
		return err
	}
	if err := checkLen("final norm", w.FinalNorm, h); err != nil {
		return err
	}
	for i := range w.Layers {
		if err := validateLayer(c, &w.Layers[i], i); err != nil {
			return fmt.Errorf("layer %d: %w", i, err)
		}
	}
	return nil
}

func validateLayer(c *checkpoint.Config, l *checkpoint.Layer, i int) error {
	h := c.HiddenSize
	if l.Kind != c.LayerTypes[i] {
		return fmt.Errorf("kind %d, config says %d", l.Kind, c.LayerTypes[i])
	}
	if err := checkLen("input norm", l.InputNorm, h); err != nil {
		return err
	}
	if err := checkLen("post-attention norm", l.PostNorm, h); err != nil {
		return err
	}
	switch l.Kind {
	case checkpoint.LinearAttention:
		if l.GDN == nil {
			return errors.New("linear-attention layer without GDN weights")
		}
		if err := validateGDN(c, l.GDN); err != nil {
			return err
		}
	case checkpoint.FullAttention:
		if l.Attn == nil {
			return errors.New("full-attention layer without attention weights")
		}
		if err := validateAttn(c, l.Attn); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown layer kind %d", l.Kind)
	}
	m := &l.MoE
	e, in, is := c.NumExperts, c.MoEIntermediate, c.SharedIntermediate
	for _, s := range []struct {
		m              *checkpoint.Matrix
		experts, o, in int
	}{{&m.Router, 0, e, h}, {&m.Gate, e, in, h}, {&m.Up, e, in, h}, {&m.Down, e, h, in},
		{&m.SharedGate, 0, is, h}, {&m.SharedUp, 0, is, h}, {&m.SharedDown, 0, h, is}, {&m.SharedEG, 0, 1, h}} {
		if err := checkShape(s.m, s.experts, s.o, s.in); err != nil {
			return err
		}
	}
	return nil
}

func validateGDN(c *checkpoint.Config, g *checkpoint.GDN) error {
	hk, hv, dk, dv, k := c.LinearNumKeyHeads, c.LinearNumValueHeads, c.LinearKeyHeadDim, c.LinearValueHeadDim, c.LinearConvKernel
	if hk <= 0 || hv <= 0 || dk <= 0 || dv <= 0 || k <= 0 || hv%hk != 0 {
		return fmt.Errorf("config GDN heads hk=%d hv=%d dk=%d dv=%d kernel=%d: need positive sizes and hv %% hk == 0", hk, hv, dk, dv, k)
	}
	h, conv := c.HiddenSize, c.ConvDim()
	for _, s := range []struct {
		m     *checkpoint.Matrix
		o, in int
	}{{&g.QKV, conv, h}, {&g.Z, hv * dv, h}, {&g.B, hv, h}, {&g.A, hv, h}, {&g.Out, h, hv * dv}} {
		if err := checkShape(s.m, 0, s.o, s.in); err != nil {
			return err
		}
	}
	for _, s := range []struct {
		name string
		v    []float32
		n    int
	}{{"conv1d", g.Conv, conv * k}, {"A_log", g.ALog, hv}, {"dt_bias", g.DtBias, hv}, {"gated norm", g.Norm, dv}} {
		if err := checkLen(s.name, s.v, s.n); err != nil {
			return err
		}
	}
	return nil
}

func validateAttn(c *checkpoint.Config, a *checkpoint.Attention) error {
	hq, hkv, d, rot := c.NumHeads, c.NumKVHeads, c.HeadDim, c.RotaryDim()
	if hq <= 0 || hkv <= 0 || d <= 0 || hq%hkv != 0 {
		return fmt.Errorf("config attention heads hq=%d hkv=%d d=%d: need positive sizes and hq %% hkv == 0", hq, hkv, d)
	}
	if rot < 0 || rot > d || rot%2 != 0 || c.RopeTheta <= 0 {
		return fmt.Errorf("config rotary dim %d (head dim %d) and theta %g: need an even rotary dim ≤ head dim and theta > 0", rot, d, c.RopeTheta)
	}
	h := c.HiddenSize
	for _, s := range []struct {
		m     *checkpoint.Matrix
		o, in int
	}{{&a.Q, hq * d * 2, h}, {&a.K, hkv * d, h}, {&a.V, hkv * d, h}, {&a.O, h, hq * d}} {
		if err := checkShape(s.m, 0, s.o, s.in); err != nil {
			return err
		}
	}
	if err := checkLen("q_norm", a.QNorm, d); err != nil {
		return err
	}
	return checkLen("k_norm", a.KNorm, d)
}

func checkLen(name string, v []float32, n int) error {
	if len(v) != n {
		return fmt.Errorf("%s has %d values, want %d", name, len(v), n)
	}
	return nil
}

// DecoderLayer is one decoder layer (model.md §4.1) on T new tokens, continuing the sequence in st:
//
//	h = h + Mixer(RMSNorm(h, input_layernorm));  h = h + MoE(RMSNorm(h, post_attention_layernorm))
//
// The mixer is GatedDeltaNet (chunked or recurrent) or GatedAttention at positions pos..pos+T−1.
// h: [T][H] → [T][H] (a new slice; h is not modified).
func (m *Model) DecoderLayer(l int, h [][]float32, st *State, chunked bool) ([][]float32, error) {
	layer := &m.w.Layers[l]
	eps := m.cfg.RMSNormEps
	a := make([][]float32, len(h)) // [T][H]
	for t := range h {
		a[t] = make([]float32, len(h[t]))
		RMSNorm(a[t], h[t], layer.InputNorm, eps)
	}
	var r [][]float32
	var err error
	if layer.Kind == checkpoint.LinearAttention {
		r, err = GatedDeltaNet(m.cfg, layer.GDN, a, st.GDN[l], chunked)
	} else {
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
		RMSNorm(mm, out[t], layer.PostNorm, eps)
		y, err := MoEBlock(m.cfg, &layer.MoE, mm)
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", l, err)
		}
		for i := range out[t] {
			out[t][i] += y[i]
		}
	}
	return out, nil
}

// Logits is lm_head(RMSNorm(h, norm)) in float32 over the full padded vocab. h: [H] → [V].
func (m *Model) Logits(h []float32) ([]float32, error) {
	n := make([]float32, len(h))
	RMSNorm(n, h, m.w.FinalNorm, m.cfg.RMSNormEps)
	out := make([]float32, m.w.LMHead.Out)
	return out, MatVec(&m.w.LMHead, 0, n, out)
}
