package checkpoint

import "fmt"

// layer loads decoder layer i: its norms, its token mixer (per layer_types) and its MoE block.
func (l *loader) layer(ly *Layer, i int) error {
	c := l.cfg
	p := fmt.Sprintf("%slayers.%d.", l.prefix, i)
	ly.Index, ly.Kind = i, c.LayerTypes[i]
	var err error
	if ly.InputNorm, err = l.norm(p+"input_layernorm.weight", c.HiddenSize); err != nil {
		return err
	}
	if ly.PostNorm, err = l.norm(p+"post_attention_layernorm.weight", c.HiddenSize); err != nil {
		return err
	}
	if ly.Kind == LinearAttention {
		ly.DeltaNet = &DeltaNet{}
		err = l.deltanet(ly.DeltaNet, p+"linear_attn.", i)
	} else {
		ly.Attn = &Attention{}
		err = l.attention(ly.Attn, p+"self_attn.", i)
	}
	if err != nil {
		return err
	}
	return l.moe(&ly.MoE, p+"mlp.", i)
}

// deltanet loads a Gated DeltaNet mixer (model.md §2.1, §2.3) from the module prefix p.
func (l *loader) deltanet(g *DeltaNet, p string, i int) error {
	c := l.cfg
	H, C, Hv := c.HiddenSize, c.ConvDim(), c.LinearNumValueHeads
	name := func(s string) string { return fmt.Sprintf("layers.%d.linear_attn.%s", i, s) }
	var err error
	mats := []struct {
		dst     *Matrix
		mod     string
		out, in int
	}{
		{&g.QKV, "in_proj_qkv", C, H}, {&g.Z, "in_proj_z", c.ValueDim(), H},
		{&g.B, "in_proj_b", Hv, H}, {&g.A, "in_proj_a", Hv, H}, {&g.Out, "out_proj", H, c.ValueDim()},
	}
	for _, m := range mats {
		if *m.dst, err = l.matrix(name(m.mod), p+m.mod, 0, m.out, m.in, catOther); err != nil {
			return err
		}
	}
	if g.Conv, err = l.conv(p+"conv1d.weight", C, c.LinearConvKernel); err != nil {
		return err
	}
	if g.ALog, err = l.vector(p+"A_log", Hv, false); err != nil {
		return err
	}
	if g.DtBias, err = l.vector(p+"dt_bias", Hv, false); err != nil {
		return err
	}
	// The gated norm is a plain weight in both layouts: never shifted.
	g.Norm, err = l.vector(p+"norm.weight", c.LinearValueHeadDim, false)
	return err
}

// attention loads a gated full-attention mixer (model.md §2.1, §4.4) from the module prefix p.
func (l *loader) attention(a *Attention, p string, i int) error {
	c := l.cfg
	H, D := c.HiddenSize, c.HeadDim
	name := func(s string) string { return fmt.Sprintf("layers.%d.self_attn.%s", i, s) }
	var err error
	mats := []struct {
		dst     *Matrix
		mod     string
		out, in int
	}{
		{&a.Q, "q_proj", 2 * c.NumHeads * D, H}, {&a.K, "k_proj", c.NumKVHeads * D, H},
		{&a.V, "v_proj", c.NumKVHeads * D, H}, {&a.O, "o_proj", H, c.NumHeads * D},
	}
	for _, m := range mats {
		if *m.dst, err = l.matrix(name(m.mod), p+m.mod, 0, m.out, m.in, catOther); err != nil {
			return err
		}
	}
	if a.QNorm, err = l.norm(p+"q_norm.weight", D); err != nil {
		return err
	}
	a.KNorm, err = l.norm(p+"k_norm.weight", D)
	return err
}

// moe loads the router, the routed experts (HF fused experts.* or MLX switch_mlp.*), the shared
// expert and its gate from the module prefix p.
func (l *loader) moe(m *MoE, p string, i int) error {
	c := l.cfg
	H, E, I, Is := c.HiddenSize, c.NumExperts, c.MoEIntermediate, c.SharedIntermediate
	name := func(s string) string { return fmt.Sprintf("layers.%d.mlp.%s", i, s) }
	var err error
	if m.Router, err = l.matrix(name("gate"), p+"gate", 0, E, H, catOther); err != nil {
		return err
	}
	fused := p + "experts.gate_up_proj"
	switch {
	case l.has(fused):
		// HF: gate_up_proj [E, 2I, H] (gate rows 0..I-1, up rows I..2I-1), down_proj [E, H, I].
		if m.Gate, err = l.window(name("experts.gate"), fused, fused, E, 2*I, I, 0, H, catRouted); err != nil {
			return err
		}
		if m.Up, err = l.window(name("experts.up"), fused, fused, E, 2*I, I, I, H, catRouted); err != nil {
			return err
		}
		down := p + "experts.down_proj"
		if m.Down, err = l.window(name("experts.down"), down, down, E, H, H, 0, I, catRouted); err != nil {
			return err
		}
	case l.has(p + "switch_mlp.gate_proj.weight"):
		sw := p + "switch_mlp."
		if m.Gate, err = l.matrix(name("experts.gate"), sw+"gate_proj", E, I, H, catRouted); err != nil {
			return err
		}
		if m.Up, err = l.matrix(name("experts.up"), sw+"up_proj", E, I, H, catRouted); err != nil {
			return err
		}
		if m.Down, err = l.matrix(name("experts.down"), sw+"down_proj", E, H, I, catRouted); err != nil {
			return err
		}
	case l.has(p + "experts.0.gate_proj.weight"):
		return fmt.Errorf("tensor %q: per-expert MoE weights are not supported; convert to the fused HF or MLX switch_mlp layout",
			p+"experts.0.gate_proj.weight")
	default:
		return fmt.Errorf("tensor %q missing (or %q; layer %d needs its routed experts)",
			fused, p+"switch_mlp.gate_proj.weight", i)
	}
	se := p + "shared_expert."
	mats := []struct {
		dst     *Matrix
		mod     string
		out, in int
	}{
		{&m.SharedGate, "gate_proj", Is, H}, {&m.SharedUp, "up_proj", Is, H}, {&m.SharedDown, "down_proj", H, Is},
	}
	for _, s := range mats {
		if *s.dst, err = l.matrix(name("shared_expert."+s.mod), se+s.mod, 0, s.out, s.in, catOther); err != nil {
			return err
		}
	}
	m.SharedEG, err = l.matrix(name("shared_expert_gate"), p+"shared_expert_gate", 0, 1, H, catOther)
	return err
}

func (l *loader) has(name string) bool {
	_, ok := l.ts[name]
	return ok
}
