package diff

import "github.com/lily-engine/lily/internal/trace"

// The kernels' documented error bounds, each relative to the largest value of the reference's
// output as the conformance and fast/cpu tests state them (the constants named there):
const (
	// normTol: RMSNorm's mean of squares summed in float32 (conformance normTol).
	normTol = 1e-6
	// matvecTol: a 4-bit mat-vec with float32 accumulation (conformance matvecTol; fast/cpu
	// qmvTol is 1e-5 of the terms' summed magnitude, which is larger than the output).
	matvecTol = 5e-6
	// deltanetTol: a whole Gated DeltaNet layer: its projections, the delta rule in float32 and the
	// gated RMSNorm (conformance deltanetTol).
	deltanetTol = 1e-5
	// attnTol: a whole gated attention layer: projections, q/k norms, RoPE, the online softmax
	// (conformance attnLayerTol).
	attnTol = 8e-6
	// moeTol: a MoE block: router, three mat-vecs per expert, SiLU and the weighted sum
	// (conformance moeTol).
	moeTol = 8e-6
	// routeTol: a router weight, a softmax ratio of float32 logits (conformance routeTol).
	routeTol = 2e-6
	// kvF16Tol: the KV cache holds K and V as IEEE fp16, each element within 2^-11 of itself
	// (fast/cpu f16KVTol's rounding term): an attention output, a convex combination of V rows,
	// inherits it from V, and K's rounding moves the scores by as much at first order.
	kvF16Tol = 1.0 / 2048
	// logitTol: |Δ logit| over the logits' spread for the whole model (conformance fastLogitTol
	// and metal logitTol).
	logitTol = 1e-4
)

// mixerTol is the bound of layer l's mixer: attention (with its fp16 KV cache) where attn[l], else
// Gated DeltaNet.
func mixerTol(l int, attn []bool) float64 {
	if l < len(attn) && attn[l] {
		return attnTol + kvF16Tol
	}
	return deltanetTol
}

// carried is the error a layer's input may already carry from the layers before it: each layer
// adds its mixer's and its MoE block's bound and the two norms', the first-order sum of relative
// errors along the chain (a stage whose output is as large as its input passes its input's
// relative error on unchanged and adds its own).
func carried(layer int, attn []bool) float64 {
	c := 0.0
	for l := range layer {
		c += 2*normTol + mixerTol(l, attn) + moeTol
	}
	return c
}

// Budget is the largest relative error (RelErr) point p may show in a model whose layer l is an
// attention layer where attn[l] (len(attn) layers): the error its input carries plus the bound of
// the kernels between that input and p.
func Budget(p trace.Point, attn []bool) float64 {
	c := carried(p.Layer, attn)
	switch p.Site {
	case trace.Embed:
		return 0 // a row of the same dequantized table: exact
	case trace.InputNorm:
		return c + normTol
	case trace.DeltaNetOut, trace.AttentionOut, trace.MixerResid:
		return c + normTol + mixerTol(p.Layer, attn)
	case trace.PostNorm:
		return c + 2*normTol + mixerTol(p.Layer, attn)
	case trace.Router:
		return c + 2*normTol + mixerTol(p.Layer, attn) + matvecTol
	case trace.MoEOut, trace.MoEResid:
		return carried(p.Layer+1, attn)
	case trace.FinalNorm:
		return carried(len(attn), attn) + normTol
	}
	return logitTol // the logits: the whole model's bound, over their spread
}

// RouteWeightBudget is the largest |Δ| of a router weight in layer l: the router logits' budget
// plus the softmax ratio's own rounding.
func RouteWeightBudget(l int, attn []bool) float64 {
	return Budget(trace.At(l, trace.Router), attn) + routeTol
}
