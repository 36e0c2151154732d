package checkpoint

import (
	"bytes"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
)

func TestMatrixRow(t *testing.T) {
	d := checkpointtest.Tiny()
	for _, layout := range []string{"hf", "mlx"} {
		ck, err := Open(writeTiny(t, layout, 1, nil))
		noErr(t, err)
		m := ck.Weights.Layers[2].MoE
		const e, r = 5, 3
		if layout == "hf" {
			// gate_up_proj [E, 2I, H] bf16: up row r of expert e is stored row e*2I + I + r.
			rowLen := d.H * 2
			at := (e*2*d.I + d.I + r) * rowLen
			w, s, _ := m.Up.Row(e, r)
			eq(t, bytes.Equal(w, m.Up.W.Data[at:at+rowLen]), true)
			eq(t, s == nil, true)
			g, _, _ := m.Gate.Row(e, r)
			at = (e*2*d.I + r) * rowLen
			eq(t, bytes.Equal(g, m.Gate.W.Data[at:at+rowLen]), true)
		} else {
			// switch_mlp.down_proj [E, H, I/8] U32, scales [E, H, I/group] bf16.
			wl, sl := d.I*d.Bits/8, d.I/d.GroupSize*2
			w, s, b := m.Down.Row(e, r)
			eq(t, bytes.Equal(w, m.Down.W.Data[(e*d.H+r)*wl:][:wl]), true)
			eq(t, bytes.Equal(s, m.Down.Scales.Data[(e*d.H+r)*sl:][:sl]), true)
			eq(t, bytes.Equal(b, m.Down.Biases.Data[(e*d.H+r)*sl:][:sl]), true)
		}
		noErr(t, ck.Close())
	}
}
