package checkpoint

import (
	"fmt"
	"strings"

	"github.com/lily-engine/lily/internal/tensortable"
)

// layer loads decoder layer i: its norms, its token mixer (per layer_types) and its MoE block,
// named and shaped by the tensor table.
func (l *loader) layer(ly *Layer, i int) error {
	t := tensortable.Layer(l.d, l.layout, l.prefix, i)
	ly.Index, ly.Kind = i, l.cfg.LayerTypes[i]
	var err error
	if ly.InputNorm, err = l.vector(t.InputNorm); err != nil {
		return err
	}
	if ly.PostNorm, err = l.vector(t.PostNorm); err != nil {
		return err
	}
	if ly.Kind == LinearAttention {
		ly.DeltaNet = &DeltaNet{}
		err = l.deltanet(ly.DeltaNet, t.DeltaNet)
	} else {
		ly.Attn = &Attention{}
		err = l.attention(ly.Attn, t.Attention)
	}
	if err != nil {
		return err
	}
	return l.moe(&ly.MoE, i)
}

// deltanet loads a Gated DeltaNet mixer (model.md §2.1, §2.3).
func (l *loader) deltanet(g *DeltaNet, t *tensortable.DeltaNetTensors) error {
	var err error
	for _, m := range []struct {
		dst *Matrix
		t   tensortable.Tensor
	}{{&g.QKV, t.QKV}, {&g.Z, t.Z}, {&g.B, t.B}, {&g.A, t.A}, {&g.Out, t.Out}} {
		if *m.dst, err = l.module(m.t, catOther); err != nil {
			return err
		}
	}
	if g.Conv, err = l.conv(t.Conv); err != nil {
		return err
	}
	for _, v := range []struct {
		dst *[]float32
		t   tensortable.Tensor
	}{{&g.ALog, t.ALog}, {&g.DtBias, t.DtBias}, {&g.Norm, t.Norm}} {
		if *v.dst, err = l.vector(v.t); err != nil {
			return err
		}
	}
	return nil
}

// attention loads a gated full-attention mixer (model.md §2.1, §4.4).
func (l *loader) attention(a *Attention, t *tensortable.AttentionTensors) error {
	var err error
	for _, m := range []struct {
		dst *Matrix
		t   tensortable.Tensor
	}{{&a.Q, t.Q}, {&a.K, t.K}, {&a.V, t.V}, {&a.O, t.O}} {
		if *m.dst, err = l.module(m.t, catOther); err != nil {
			return err
		}
	}
	if a.QNorm, err = l.vector(t.QNorm); err != nil {
		return err
	}
	a.KNorm, err = l.vector(t.KNorm)
	return err
}

// moe loads layer i's router, routed experts (HF fused experts.* or MLX switch_mlp.*, whichever
// the files hold), shared expert and its gate.
func (l *loader) moe(m *MoE, i int) error {
	hf := tensortable.Layer(l.d, LayoutHF, l.prefix, i).MoE
	mlx := tensortable.Layer(l.d, LayoutMLX, l.prefix, i).MoE
	// The routed experts' logical names are the same in both layouts.
	expert := func(s string) string { return tensortable.LayerPrefix("", i) + "mlp.experts." + s }
	var err error
	if m.Router, err = l.module(hf.Router, catOther); err != nil {
		return err
	}
	switch {
	case l.has(hf.GateUp.Name):
		// HF: gate_up_proj [E, 2I, H] (gate rows 0..I-1, up rows I..2I-1), down_proj [E, H, I].
		f, d := hf.GateUp, hf.Down
		E, rows, in := f.Shape[0], f.Shape[1], f.Shape[2]
		if m.Gate, err = l.window(expert("gate"), f.Name, f.Name, E, rows, rows/2, 0, in, catRouted); err != nil {
			return err
		}
		if m.Up, err = l.window(expert("up"), f.Name, f.Name, E, rows, rows/2, rows/2, in, catRouted); err != nil {
			return err
		}
		if m.Down, err = l.window(expert("down"), d.Name, d.Name, E, d.Shape[1], d.Shape[1], 0, d.Shape[2], catRouted); err != nil {
			return err
		}
	case l.has(mlx.Gate.Name + tensortable.WeightSuffix):
		for _, x := range []struct {
			dst  *Matrix
			name string
			t    tensortable.Tensor
		}{{&m.Gate, "gate", mlx.Gate}, {&m.Up, "up", mlx.Up}, {&m.Down, "down", mlx.Down}} {
			if *x.dst, err = l.named(expert(x.name), x.t, catRouted); err != nil {
				return err
			}
		}
	case l.has(hf.PerExpert):
		return fmt.Errorf("tensor %q: per-expert MoE weights are not supported; convert to the fused HF or MLX switch_mlp layout",
			hf.PerExpert)
	default:
		return fmt.Errorf("tensor %q missing (or %q; layer %d needs its routed experts)",
			hf.GateUp.Name, mlx.Gate.Name+tensortable.WeightSuffix, i)
	}
	for _, s := range []struct {
		dst *Matrix
		t   tensortable.Tensor
	}{{&m.SharedGate, hf.SharedGate}, {&m.SharedUp, hf.SharedUp}, {&m.SharedDown, hf.SharedDown}, {&m.SharedEG, hf.SharedEG}} {
		if *s.dst, err = l.module(s.t, catOther); err != nil {
			return err
		}
	}
	return nil
}

// module loads the Linear module t under its logical name: t's name without the text prefix.
func (l *loader) module(t tensortable.Tensor, cat category) (Matrix, error) {
	return l.named(strings.TrimPrefix(t.Name, l.prefix), t, cat)
}

// named loads the Linear module t of logical shape [out, in] or [experts, out, in] as logical.
func (l *loader) named(logical string, t tensortable.Tensor, cat category) (Matrix, error) {
	s := t.Shape
	if len(s) == 3 {
		return l.matrix(logical, t.Name, s[0], s[1], s[2], cat)
	}
	return l.matrix(logical, t.Name, 0, s[0], s[1], cat)
}

func (l *loader) has(name string) bool {
	_, ok := l.ts[name]
	return ok
}
