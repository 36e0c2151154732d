package checkpoint

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/lily-engine/lily/internal/hfconfig"
)

// TestConfigFileRoundTrip: ParseConfig reads back every field hfconfig.File writes, for random
// configs (sizes, layer types, RoPE, token ids, quantization with overrides), so the writer and the
// reader agree on every key.
func TestConfigFileRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := &Config{}
		for _, k := range c.IntKeys() {
			*k.Field = rapid.IntRange(1, 4096).Draw(rt, k.Key)
		}
		c.NumKVHeads = rapid.IntRange(1, 8).Draw(rt, "hkv")
		c.NumHeads = c.NumKVHeads * rapid.IntRange(1, 4).Draw(rt, "groups")
		c.LinearNumKeyHeads = rapid.IntRange(1, 8).Draw(rt, "hk")
		c.LinearNumValueHeads = c.LinearNumKeyHeads * rapid.IntRange(1, 4).Draw(rt, "vgroups")
		c.NumExpertsPerTok = rapid.IntRange(1, c.NumExperts).Draw(rt, "topk")
		c.HeadDim = rapid.SampledFrom([]int{32, 64, 128, 256}).Draw(rt, "head_dim")
		c.PartialRotaryFactor = rapid.SampledFrom([]float64{0.25, 0.5, 1}).Draw(rt, "partial")
		c.RopeTheta = rapid.SampledFrom([]float64{10000, 1e7, 12345.5}).Draw(rt, "theta")
		c.RMSNormEps = rapid.SampledFrom([]float64{1e-6, 1e-5, 3.5e-6}).Draw(rt, "eps")
		c.TieWordEmbeddings = rapid.Bool().Draw(rt, "tie")
		c.LayerTypes = make([]LayerKind, c.NumLayers%64+1)
		c.NumLayers = len(c.LayerTypes)
		for i := range c.LayerTypes {
			c.LayerTypes[i] = rapid.SampledFrom([]LayerKind{LinearAttention, FullAttention}).Draw(rt, "kind")
		}
		c.BOSTokenID = rapid.IntRange(-1, c.VocabSize-1).Draw(rt, "bos")
		c.EOSTokenIDs = rapid.SliceOfN(rapid.IntRange(0, c.VocabSize-1), 0, 3).Draw(rt, "eos")
		if len(c.EOSTokenIDs) == 0 {
			c.EOSTokenIDs = nil
		}
		if rapid.Bool().Draw(rt, "quantized") {
			c.Quant = &Quantization{Bits: rapid.SampledFrom([]int{4, 8}).Draw(rt, "bits"),
				GroupSize: rapid.SampledFrom([]int{32, 64, 128}).Draw(rt, "group"), Mode: hfconfig.ModeAffine,
				Overrides: map[string]QuantParams{}}
			for i := range rapid.IntRange(0, 3).Draw(rt, "overrides") {
				name := "language_model.model.layers." + string(rune('0'+i)) + ".mlp.gate"
				c.Quant.Overrides[name] = QuantParams{Bits: 8, GroupSize: c.Quant.GroupSize}
			}
		}
		b, err := hfconfig.File{Config: c, Text: hfconfig.Object{{Key: "unread_key", Value: 1}}}.MarshalFile()
		if err != nil {
			rt.Fatal(err)
		}
		got, err := ParseConfig(b, nil)
		if err != nil {
			rt.Fatalf("%v\n%s", err, b)
		}
		if got.Quant != nil && len(got.Quant.Overrides) == 0 && c.Quant != nil && len(c.Quant.Overrides) == 0 {
			got.Quant.Overrides = c.Quant.Overrides
		}
		if !reflect.DeepEqual(got, c) {
			rt.Fatalf("read back %+v\nwrote %+v\n%s", got, c, b)
		}
	})
}
