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
	// gdnTol: a whole Gated DeltaNet layer: its projections, the delta rule in float32 and the
	// gated RMSNorm (conformance gdnTol).
	gdnTol = 1e-5
	// attnTol: a whole gated attention layer: projections, q/k norms, RoPE, the online softmax
	// (conformance attnLayerTol).
	attnTol = 8e-6
	// moeTol: a MoE block: router, three mat-vecs per expert, SiLU and the weighted sum
	// (conformance moeTol).
	moeTol = 8e-6
	// routeTol: a router weight, a softmax ratio of float32 logits (conformance routeTol).
	routeTol = 2e-6
	// logitTol: |Δ logit| over the logits' spread for the whole model (conformance fastLogitTol
	// and metal logitTol).
	logitTol = 1e-4
)

// carried is the error a layer's input may already carry from the layers before it: each layer
// adds its mixer's and its MoE block's bound and the two norms', the first-order sum of relative
// errors along the chain (a stage whose output is as large as its input passes its input's
// relative error on unchanged and adds its own).
func carried(layer int) float64 {
	return float64(layer) * (2*normTol + max(gdnTol, attnTol) + moeTol)
}

// Budget is the largest relative error (RelErr) point p of a model of layers layers may show: the
// error its input carries plus the bound of the kernels between that input and p.
func Budget(p trace.Point, layers int) float64 {
	c := carried(p.Layer)
	switch p.Site {
	case trace.Embed:
		return 0 // a row of the same dequantized table: exact
	case trace.InputNorm:
		return c + normTol
	case trace.DeltaNetOut:
		return c + normTol + gdnTol
	case trace.AttentionOut:
		return c + normTol + attnTol
	case trace.MixerResid:
		return c + normTol + max(gdnTol, attnTol)
	case trace.PostNorm:
		return c + 2*normTol + max(gdnTol, attnTol)
	case trace.Router:
		return c + 2*normTol + max(gdnTol, attnTol) + matvecTol
	case trace.MoEOut, trace.MoEResid:
		return carried(p.Layer + 1)
	case trace.FinalNorm:
		return carried(layers) + normTol
	}
	return logitTol // the logits: the whole model's bound, over their spread
}

// RouteWeightBudget is the largest |Δ| of a router weight in layer l: the router logits' budget
// plus the softmax ratio's own rounding.
func RouteWeightBudget(l int) float64 { return Budget(trace.At(l, trace.Router), 0) + routeTol }
