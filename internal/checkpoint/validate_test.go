package checkpoint

import "testing"

// Validate accepts the tiny model as loaded from either layout and rejects each way a Weights can
// disagree with its config, naming the part: Tiny has H=64, E=8, I=32, C=128, K=4, D=32.
func TestValidate(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(w *Weights)
		want  string
	}{
		{"expert in-dim", func(w *Weights) { w.Layers[2].MoE.Down.In++ },
			"layer 2: matrix layers.2.mlp.experts.down: shape experts=8 [64, 33], want experts=8 [64, 32]"},
		{"router rows", func(w *Weights) { w.Layers[0].MoE.Router.Out = 4 }, "want experts=0 [8, 64]"},
		{"short conv", func(w *Weights) { w.Layers[0].DeltaNet.Conv = w.Layers[0].DeltaNet.Conv[1:] },
			"layer 0: conv1d has 511 values, want 512"},
		{"short q_norm", func(w *Weights) { w.Layers[3].Attn.QNorm = w.Layers[3].Attn.QNorm[:31] },
			"layer 3: q_norm has 31 values, want 32"},
		{"short final norm", func(w *Weights) { w.FinalNorm = w.FinalNorm[:1] }, "final norm has 1 values, want 64"},
		{"lm_head rows", func(w *Weights) { w.LMHead.Out-- }, "matrix lm_head: shape experts=0 [255, 64], want experts=0 [256, 64]"},
		{"o_proj in-dim", func(w *Weights) { w.Layers[3].Attn.O.In = 64 }, "want experts=0 [64, 128]"},
		{"no DeltaNet", func(w *Weights) { w.Layers[1].DeltaNet = nil }, "layer 1: linear-attention layer without DeltaNet weights"},
		{"kind", func(w *Weights) { w.Layers[3].Kind = LinearAttention }, "layer 3: kind 1, config says 2"},
	}
	for _, layout := range []string{"hf", "mlx"} {
		ck, err := Open(writeTiny(t, layout, 1, nil))
		noErr(t, err)
		noErr(t, ck.Weights.Validate())
		noErr(t, ck.Close())
		for _, c := range cases {
			t.Run(layout+"/"+c.name, func(t *testing.T) {
				ck, err := Open(writeTiny(t, layout, 1, nil))
				noErr(t, err)
				defer ck.Close()
				c.spoil(ck.Weights)
				errHas(t, ck.Weights.Validate(), c.want)
			})
		}
	}
}
