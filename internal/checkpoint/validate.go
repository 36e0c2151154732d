package checkpoint

import (
	"errors"
	"fmt"

	"github.com/lily-engine/lily/internal/safetensors"
	"github.com/lily-engine/lily/internal/tensortable"
)

// Validate checks the config's derived sizes and every tensor of w against them: each layer's kind,
// the logical shapes and the stored byte counts every engine indexes by. An engine calls it before it
// reads any weight, so that no engine indexes a tensor out of its bounds.
func (w *Weights) Validate() error {
	if w == nil || w.Config == nil {
		return errors.New("nil weights or config")
	}
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
	if err := c.Dims().CheckGroups(); err != nil {
		return fmt.Errorf("config %w", err)
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
	d := c.Dims()
	if err := checkShape(&w.Embed, tensortable.Embed(d, "")); err != nil {
		return err
	}
	if err := checkShape(&w.LMHead, tensortable.LMHead(d, LayoutMLX)); err != nil {
		return err
	}
	if err := checkLen("final norm", w.FinalNorm, tensortable.FinalNorm(d, "")); err != nil {
		return err
	}
	for i := range w.Layers {
		if err := validateLayer(c, &w.Layers[i], i); err != nil {
			return fmt.Errorf("layer %d: %w", i, err)
		}
	}
	return nil
}

// validateLayer checks layer i against the tensor table's logical shapes. The table's MLX layout
// lists the routed experts as the three [E, out, in] matrices every Weights holds (HF's fused
// tensor is split into Gate and Up by the loader).
func validateLayer(c *Config, l *Layer, i int) error {
	if l.Kind != c.LayerTypes[i] {
		return fmt.Errorf("kind %d, config says %d", l.Kind, c.LayerTypes[i])
	}
	t := tensortable.Layer(c.Dims(), LayoutMLX, "", i)
	if err := checkLen("input norm", l.InputNorm, t.InputNorm); err != nil {
		return err
	}
	if err := checkLen("post-attention norm", l.PostNorm, t.PostNorm); err != nil {
		return err
	}
	switch l.Kind {
	case LinearAttention:
		if l.DeltaNet == nil {
			return errors.New("linear-attention layer without DeltaNet weights")
		}
		if err := validateDeltaNet(c, l.DeltaNet, t.DeltaNet); err != nil {
			return err
		}
	case FullAttention:
		if l.Attn == nil {
			return errors.New("full-attention layer without attention weights")
		}
		if err := validateAttn(c, l.Attn, t.Attention); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown layer kind %d", l.Kind)
	}
	m, tm := &l.MoE, t.MoE
	for _, s := range []struct {
		m *Matrix
		t tensortable.Tensor
	}{{&m.Router, tm.Router}, {&m.Gate, tm.Gate}, {&m.Up, tm.Up}, {&m.Down, tm.Down},
		{&m.SharedGate, tm.SharedGate}, {&m.SharedUp, tm.SharedUp}, {&m.SharedDown, tm.SharedDown}, {&m.SharedEG, tm.SharedEG}} {
		if err := checkShape(s.m, s.t); err != nil {
			return err
		}
	}
	return nil
}

func validateDeltaNet(c *Config, g *DeltaNet, t *tensortable.DeltaNetTensors) error {
	hk, hv, dk, dv, k := c.LinearNumKeyHeads, c.LinearNumValueHeads, c.LinearKeyHeadDim, c.LinearValueHeadDim, c.LinearConvKernel
	if hk <= 0 || hv <= 0 || dk <= 0 || dv <= 0 || k <= 0 || hv%hk != 0 {
		return fmt.Errorf("config DeltaNet heads hk=%d hv=%d dk=%d dv=%d kernel=%d: need positive sizes and hv %% hk == 0", hk, hv, dk, dv, k)
	}
	for _, s := range []struct {
		m *Matrix
		t tensortable.Tensor
	}{{&g.QKV, t.QKV}, {&g.Z, t.Z}, {&g.B, t.B}, {&g.A, t.A}, {&g.Out, t.Out}} {
		if err := checkShape(s.m, s.t); err != nil {
			return err
		}
	}
	for _, s := range []struct {
		name string
		v    []float32
		t    tensortable.Tensor
	}{{"conv1d", g.Conv, t.Conv}, {"A_log", g.ALog, t.ALog}, {"dt_bias", g.DtBias, t.DtBias}, {"gated norm", g.Norm, t.Norm}} {
		if err := checkLen(s.name, s.v, s.t); err != nil {
			return err
		}
	}
	return nil
}

func validateAttn(c *Config, a *Attention, t *tensortable.AttentionTensors) error {
	hq, hkv, d, rot := c.NumHeads, c.NumKVHeads, c.HeadDim, c.RotaryDim()
	if hq <= 0 || hkv <= 0 || d <= 0 || hq%hkv != 0 {
		return fmt.Errorf("config attention heads hq=%d hkv=%d d=%d: need positive sizes and hq %% hkv == 0", hq, hkv, d)
	}
	if rot < 0 || rot > d || rot%2 != 0 || c.RopeTheta <= 0 {
		return fmt.Errorf("config rotary dim %d (head dim %d) and theta %g: need an even rotary dim ≤ head dim and theta > 0", rot, d, c.RopeTheta)
	}
	for _, s := range []struct {
		m *Matrix
		t tensortable.Tensor
	}{{&a.Q, t.Q}, {&a.K, t.K}, {&a.V, t.V}, {&a.O, t.O}} {
		if err := checkShape(s.m, s.t); err != nil {
			return err
		}
	}
	if err := checkLen("q_norm", a.QNorm, t.QNorm); err != nil {
		return err
	}
	return checkLen("k_norm", a.KNorm, t.KNorm)
}

// checkLen checks a float32 vector against t's stored shape (the conv weight's [C, 1, K] or
// [C, K, 1] holds C·K values).
func checkLen(name string, v []float32, t tensortable.Tensor) error {
	n := int(numel(t.Shape))
	if len(v) != n {
		return fmt.Errorf("%s has %d values, want %d", name, len(v), n)
	}
	return nil
}

// Check verifies that m's stored tensors hold exactly the bytes its logical shape needs, so that
// every engine can index them without bounds surprises. It does not look at Tensor.Shape (the loader
// checks names and shapes); it checks the byte counts the indexing relies on.
func (m *Matrix) Check() error {
	if m.Out <= 0 || m.In <= 0 || m.Experts < 0 || m.RowOffset < 0 || m.StoredRows < m.RowOffset+m.Out {
		return fmt.Errorf("matrix %s: bad shape experts=%d out=%d in=%d rows=%d offset=%d",
			m.Name, m.Experts, m.Out, m.In, m.StoredRows, m.RowOffset)
	}
	rows := max(m.Experts, 1) * m.StoredRows
	switch m.Bits {
	case 0:
		switch m.W.DType {
		case safetensors.BF16, safetensors.F16, safetensors.F32:
		default:
			return fmt.Errorf("matrix %s: dense dtype %v, want BF16, F16 or F32", m.Name, m.W.DType)
		}
		if want := rows * m.In * m.W.DType.Size(); len(m.W.Data) != want {
			return fmt.Errorf("matrix %s: %d weight bytes, want %d", m.Name, len(m.W.Data), want)
		}
	case 4, 8:
		if m.GroupSize <= 0 || m.In%m.GroupSize != 0 || m.GroupSize%(32/m.Bits) != 0 {
			return fmt.Errorf("matrix %s: group size %d does not divide in=%d into whole words", m.Name, m.GroupSize, m.In)
		}
		if m.W.DType != safetensors.U32 {
			return fmt.Errorf("matrix %s: packed dtype %v, want U32", m.Name, m.W.DType)
		}
		if want := rows * m.In * m.Bits / 8; len(m.W.Data) != want {
			return fmt.Errorf("matrix %s: %d packed bytes, want %d", m.Name, len(m.W.Data), want)
		}
		for _, t := range []*Tensor{&m.Scales, &m.Biases} {
			switch t.DType {
			case safetensors.BF16, safetensors.F16, safetensors.F32:
			default:
				return fmt.Errorf("matrix %s: %s dtype %v, want BF16, F16 or F32", m.Name, t.Name, t.DType)
			}
			if want := rows * (m.In / m.GroupSize) * t.DType.Size(); len(t.Data) != want {
				return fmt.Errorf("matrix %s: %s has %d bytes, want %d", m.Name, t.Name, len(t.Data), want)
			}
		}
	default:
		return fmt.Errorf("matrix %s: %d bits, want 0, 4 or 8", m.Name, m.Bits)
	}
	return nil
}

// checkShape reports whether m is a checked matrix of t's logical shape, [out, in] or
// [experts, out, in].
func checkShape(m *Matrix, t tensortable.Tensor) error {
	experts, out, in := 0, t.Shape[0], t.Shape[1]
	if len(t.Shape) == 3 {
		experts, out, in = t.Shape[0], t.Shape[1], t.Shape[2]
	}
	if m.Experts != experts || m.Out != out || m.In != in {
		return fmt.Errorf("matrix %s: shape experts=%d [%d, %d], want experts=%d [%d, %d]",
			m.Name, m.Experts, m.Out, m.In, experts, out, in)
	}
	return m.Check()
}
