package checkpoint

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
)

// writeTiny writes the tiny model in layout ("hf" or "mlx") with the given specs edit applied.
func writeTiny(t *testing.T, layout string, shards int, edit func([]checkpointtest.Spec) []checkpointtest.Spec) string {
	t.Helper()
	d := checkpointtest.Tiny()
	specs := d.Specs(layout)
	if edit != nil {
		specs = edit(specs)
	}
	dir := t.TempDir()
	noErr(t, checkpointtest.Write(dir, d.ConfigJSON(layout), specs, shards, 1))
	return dir
}

// specBytes is the stored size of specs, computed independently of the loader.
func specBytes(specs []checkpointtest.Spec) int64 {
	var n int64
	for _, s := range specs {
		b := int64(s.DType.Size())
		for _, d := range s.Shape {
			b *= int64(d)
		}
		n += b
	}
	return n
}

// decodeBytes is what a decode step reads, from the specs by name: everything but the
// unselected routed experts, and one embedding row instead of the table (unless tied, when
// lm_head reads the whole table).
func decodeBytes(d checkpointtest.Dims, specs []checkpointtest.Spec, tied bool) int64 {
	var routed, embed int64
	for _, s := range specs {
		n := specBytes([]checkpointtest.Spec{s})
		switch {
		case strings.Contains(s.Name, "mlp.experts.") || strings.Contains(s.Name, "switch_mlp."):
			routed += n
		case strings.Contains(s.Name, "embed_tokens."):
			embed += n
		}
	}
	b := specBytes(specs) - routed + routed/int64(d.E)*int64(d.TopK) + embed/int64(d.Vocab)
	if !tied {
		b -= embed
	}
	return b
}

// tinyParams is the tiny model's parameter count from its dims (model.md §2.1 shapes).
func tinyParams(d checkpointtest.Dims) (total, routed, embed int64) {
	embed = int64(d.Vocab * d.H)
	total = 2*embed + int64(d.H)
	for i := 0; i < d.NumLayers(); i++ {
		total += int64(2 * d.H)
		if d.IsFull(i) {
			total += int64(2*d.Hq*d.D*d.H + 2*d.Hkv*d.D*d.H + d.H*d.Hq*d.D + 2*d.D)
		} else {
			vd := d.Hv * d.Dv
			total += int64(d.ConvDim()*d.H + vd*d.H + 2*d.Hv*d.H + d.H*vd + d.ConvDim()*d.K + 2*d.Hv + d.Dv)
		}
		total += int64(d.E*d.H + 3*d.Is*d.H + d.H)
		routed += int64(3 * d.E * d.I * d.H)
	}
	return total + routed, routed, embed
}

func TestOpenTinyBothLayouts(t *testing.T) {
	d := checkpointtest.Tiny()
	total, routed, embed := tinyParams(d)
	for _, layout := range []string{"hf", "mlx"} {
		for _, shards := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%d", layout, shards), func(t *testing.T) {
				dir := writeTiny(t, layout, shards, nil)
				ck, err := Open(dir)
				noErr(t, err)
				defer ck.Close()
				w := ck.Weights
				eq(t, w.Layout.String(), layout)
				eq(t, len(w.Layers), 4)
				shift := float32(0)
				if layout == "hf" {
					shift = 1
				}
				for i := range d.H {
					eq(t, w.Layers[0].InputNorm[i], checkpointtest.NormValue(i)+shift)
					eq(t, w.FinalNorm[i], checkpointtest.NormValue(i)+shift)
				}
				g := w.Layers[0].DeltaNet
				for i := range d.Dv {
					eq(t, g.Norm[i], checkpointtest.NormValue(i)) // gated norm: never shifted
				}
				eq(t, g.ALog[3], checkpointtest.NormValue(3))
				eq(t, len(g.Conv), d.ConvDim()*d.K)
				// w[c=1][j=2] sits at flat 1*K+2 in HF [C,1,K] and MLX [C,K,1] alike.
				conv := ck.files.byName[fmt.Sprintf("%slayers.0.linear_attn.conv1d.weight", prefixOf(layout))]
				eq(t, g.Conv[1*d.K+2], bf16At(conv.Data, 1*d.K+2))
				if w.Layers[0].Attn != nil || w.Layers[3].DeltaNet != nil {
					t.Fatal("layer kinds not respected")
				}
				a := w.Layers[3].Attn
				eq(t, a.QNorm[2], checkpointtest.NormValue(2)+shift)
				eq(t, a.Q.Out, 2*d.Hq*d.D)
				m := w.Layers[1].MoE
				eq(t, [3]int{m.Gate.Experts, m.Gate.Out, m.Gate.In}, [3]int{d.E, d.I, d.H})
				eq(t, [3]int{m.Down.Experts, m.Down.Out, m.Down.In}, [3]int{d.E, d.H, d.I})
				if layout == "hf" {
					eq(t, [3]int{m.Gate.StoredRows, m.Gate.RowOffset, m.Up.RowOffset}, [3]int{2 * d.I, 0, d.I})
					eq(t, m.Up.W.Name, "model.language_model.layers.1.mlp.experts.gate_up_proj")
					eq(t, m.Router.Bits, 0)
				} else {
					eq(t, [3]int{m.Gate.StoredRows, m.Gate.RowOffset, m.Up.RowOffset}, [3]int{d.I, 0, 0})
					eq(t, [4]int{m.Router.Bits, m.SharedEG.Bits, m.Gate.Bits, w.Embed.Bits}, [4]int{8, 8, 4, 4})
					eq(t, m.Gate.GroupSize, d.GroupSize)
					eq(t, len(m.Gate.Scales.Data), d.E*d.I*d.H/d.GroupSize*2)
				}
				eq(t, len(m.Gate.W.Data), int(nbytes(m.Gate.W)))

				s := ck.Stats()
				specs := d.Specs(layout)
				eq(t, s.Layout, layout)
				eq(t, s.Tensors, len(specs))
				eq(t, s.Files, shards)
				eq(t, s.ParamsTotal, total)
				eq(t, s.ParamsActive, total-embed-routed+routed/int64(d.E)*int64(d.TopK))
				eq(t, s.BytesTotal, specBytes(specs))
				eq(t, s.DecodeBytesPerToken, decodeBytes(d, specs, false))
				eq(t, s.LinearAttention, 3)
			})
		}
	}
}

// TestOpenSkipsVisionAndMTP checks that vision and MTP tensors are tolerated and not counted.
func TestOpenSkipsVisionAndMTP(t *testing.T) {
	bf := checkpointtest.Tiny().Specs("mlx")[0].DType
	extra := []checkpointtest.Spec{
		{Name: "vision_tower.blocks.0.attn.qkv.weight", DType: bf, Shape: []int{4, 4}},
		{Name: "model.visual.patch_embed.proj.weight", DType: bf, Shape: []int{2}},
		{Name: "mtp.fc.weight", DType: bf, Shape: []int{2, 2}},
	}
	dir := writeTiny(t, "mlx", 2, func(s []checkpointtest.Spec) []checkpointtest.Spec { return append(s, extra...) })
	ck, err := Open(dir)
	noErr(t, err)
	defer ck.Close()
	s := ck.Stats()
	eq(t, s.SkippedTensors, 3)
	eq(t, s.BytesTotal, specBytes(checkpointtest.Tiny().Specs("mlx")))
}

func TestOpenTiedEmbeddings(t *testing.T) {
	d := checkpointtest.Tiny()
	dir := t.TempDir()
	var specs []checkpointtest.Spec
	for _, s := range d.Specs("hf") {
		if s.Name != "lm_head.weight" {
			specs = append(specs, s)
		}
	}
	cfg := d.ConfigJSON("hf")
	noErr(t, checkpointtest.Write(dir, cfg, specs, 1, 1))
	_, err := Open(dir)
	errHas(t, err, `tensor "lm_head.weight" missing`)

	cfg = editConfig(t, cfg, func(top, text map[string]any) {
		top["tie_word_embeddings"], text["tie_word_embeddings"] = true, true
	})
	noErr(t, checkpointtest.Write(dir, cfg, specs, 1, 1))
	ck, err := Open(dir)
	noErr(t, err)
	defer ck.Close()
	eq(t, ck.Weights.LMHead.W.Name, "model.language_model.embed_tokens.weight")
	total, _, embed := tinyParams(d)
	eq(t, ck.Stats().ParamsTotal, total-embed)
	eq(t, ck.Stats().DecodeBytesPerToken, decodeBytes(d, specs, true))
}

// editConfig applies edit to a nested config.json's top level and text_config.
func editConfig(t *testing.T, cfg []byte, edit func(top, text map[string]any)) []byte {
	t.Helper()
	var top map[string]any
	noErr(t, json.Unmarshal(cfg, &top))
	edit(top, top["text_config"].(map[string]any))
	out, err := json.Marshal(top)
	noErr(t, err)
	return out
}

func prefixOf(layout string) string {
	if layout == "mlx" {
		return "language_model.model."
	}
	return "model.language_model."
}

// bf16At decodes element i of little-endian bf16 data.
func bf16At(b []byte, i int) float32 {
	return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
}

func TestOpenMissingDirAndConfig(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "nope"))
	errHas(t, err, "nope", "no such file")
	_, err = Open(t.TempDir())
	errHas(t, err, "config.json")
}
