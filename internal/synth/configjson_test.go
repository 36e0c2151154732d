package synth

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// TestConfigJSONReadsBack: the loader's ParseConfig reads every preset's config.json, in both
// layouts, back to the synth config's sizes, RoPE, token ids and quantization.
func TestConfigJSONReadsBack(t *testing.T) {
	for _, name := range PresetNames() {
		for _, layout := range []Layout{LayoutHF, LayoutMLX} {
			p := mustPlan(t, mustPreset(t, name), layout, 0)
			b, err := p.ConfigJSON()
			require.NoError(t, err)
			c, err := checkpoint.ParseConfig(b, nil)
			require.NoError(t, err, "%s %v", name, layout)
			s := p.Config
			assert.Equal(t, []int{s.HiddenSize, s.NumLayers, s.VocabSize, s.NumHeads, s.NumKVHeads, s.HeadDim,
				s.LinearNumKeyHeads, s.LinearNumValueHeads, s.LinearKeyHeadDim, s.LinearValueHeadDim,
				s.LinearConvKernel, s.NumExperts, s.NumExpertsPerTok, s.MoEIntermediate, s.SharedIntermediate,
				s.MaxPositionEmbeddings},
				[]int{c.HiddenSize, c.NumLayers, c.VocabSize, c.NumHeads, c.NumKVHeads, c.HeadDim,
					c.LinearNumKeyHeads, c.LinearNumValueHeads, c.LinearKeyHeadDim, c.LinearValueHeadDim,
					c.LinearConvKernel, c.NumExperts, c.NumExpertsPerTok, c.MoEIntermediate, c.SharedIntermediate,
					c.MaxPositionEmbeddings}, "%s %v sizes", name, layout)
			assert.Equal(t, s.dims().LayerTypes, c.LayerTypes)
			assert.Equal(t, []float64{s.RMSNormEps, s.RopeTheta, s.PartialRotaryFactor},
				[]float64{c.RMSNormEps, c.RopeTheta, c.PartialRotaryFactor})
			assert.Equal(t, TokenEndOfText, c.BOSTokenID)
			assert.Equal(t, []int{TokenEndOfText}, c.EOSTokenIDs)
			if layout == LayoutHF {
				assert.Nil(t, c.Quant)
				continue
			}
			require.NotNil(t, c.Quant)
			assert.Equal(t, checkpoint.QuantParams{Bits: defaultBits, GroupSize: s.GroupSize}, c.Quant.Params("no.such.module"))
			mods := routerModules(s)
			require.NotEmpty(t, mods)
			assert.Len(t, c.Quant.Overrides, len(mods))
			for _, m := range mods {
				assert.Equal(t, checkpoint.QuantParams{Bits: routerBits, GroupSize: s.GroupSize}, c.Quant.Params(m), m)
			}
		}
	}
}
