package conformance

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lily-engine/lily/fast"
	"github.com/lily-engine/lily/internal/diff"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
	"github.com/lily-engine/lily/internal/trace/tracetest"
)

// layerPrompt is the prefill of checkLayers (ids below every test model's vocabulary);
// layerDecode greedy steps of ref follow it.
func layerPrompt() []int32 { return []int32{9, 100, 42, 7, 200, 15, 88, 51, 40, 1, 2, 3} }

const layerDecode = 3

// layerOutput reports whether p is one of the outputs a layer's check looks at: its mixer's
// (Gated DeltaNet or gated attention, after the out projection) or its MoE block's.
func layerOutput(p trace.Point) bool {
	return p.Site == trace.DeltaNetOut || p.Site == trace.AttentionOut || p.Site == trace.MoEOut
}

// layerErrors runs b and ref (rb) on the same tokens with every intermediate recorded
// (internal/diff: a prefill of layerPrompt, then ref's greedy tokens decoded one at a time by
// both) and lists what breaks the backend's layer budget: any layer's mixer or MoE output at any
// position further than layerTol from ref's (max|Δ| over max|ref|), a router choice that differs
// from ref's by more than a near tie, and a point one backend reports and the other does not.
// worst is the largest error of each layer output, for the log. (lily diff's per-point chain
// budgets, diff.Budget, are the kernels' first-order bounds; internal/diff's tests hold the
// fixtures to them.)
func layerErrors(b, rb engine.Backend, layerTol float64) (bad []string, worst map[trace.Point]float64, err error) {
	rep, _, _, err := diff.Run(context.Background(), b, rb, layerPrompt(), layerDecode)
	if err != nil {
		return nil, nil, err
	}
	for _, m := range rep.Missing {
		bad = append(bad, "point reported by one backend only: "+m)
	}
	for _, f := range rep.Flips {
		if !f.NearTie {
			bad = append(bad, fmt.Sprintf("L%d router at %d: experts %v instead of %v (margin %.3g, max |Δ logit| %.3g)",
				f.Layer, f.Position, f.OnlyGot, f.OnlyRef, f.Margin, f.MaxDelta))
		}
	}
	worst = map[trace.Point]float64{}
	for _, row := range rep.Rows {
		p, err := trace.Parse(row.Point)
		if err != nil {
			return nil, nil, err
		}
		if !layerOutput(p) {
			continue
		}
		worst[p] = max(worst[p], row.MaxRel)
		if row.MaxRel > layerTol {
			bad = append(bad, fmt.Sprintf("%s at %d (%s): error %.3g past the backend's layer budget %.3g",
				row.Point, row.Position, diff.StepName(row.Step), row.MaxRel, layerTol))
		}
	}
	return bad, worst, nil
}

// checkLayers holds every layer of b to ref's on the same tokens (layerErrors), with the
// backend's layer budget.
func checkLayers(t *testing.T, name string, b, rb engine.Backend, layerTol float64) {
	t.Helper()
	bad, worst, err := layerErrors(b, rb, layerTol)
	if err != nil {
		t.Fatal(err)
	}
	var top float64
	var at trace.Point
	for p, e := range worst {
		if e >= top {
			top, at = e, p
		}
	}
	t.Logf("%s vs ref: %d layer outputs checked, the largest error %.3g at %v (budget %.3g)", name, len(worst), top, at, layerTol)
	if len(worst) == 0 {
		t.Fatalf("%s: no layer outputs were compared", name)
	}
	for _, s := range bad {
		t.Errorf("%s: %s", name, s)
	}
}

// TestLayerErrorsCatchesFault shows that the per-layer check can fail: fast with an error of 1e-3
// of the row's scale (20× fastLayerTol) injected into one layer's output at one position, in the
// prefill and in a decode step, is reported there.
func TestLayerErrorsCatchesFault(t *testing.T) {
	ck := metalCheckpoint(t, "mlx")
	rb, fb := backendsWith(t, ck, fast.Options{MaxContext: 256, KVCacheF32: true})
	for _, f := range []tracetest.Fault{
		{P: trace.At(1, trace.DeltaNetOut), Pos: 4, Rel: 1e-3},
		{P: trace.At(3, trace.AttentionOut), Pos: len(layerPrompt()) + 1, Rel: 1e-3},
		{P: trace.At(2, trace.MoEOut), Pos: len(layerPrompt()), Rel: 1e-3},
	} {
		bad, _, err := layerErrors(tracetest.Inject(fb, f), rb, fastLayerTol)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%v at %d ", f.P, f.Pos)
		if len(bad) == 0 || !strings.HasPrefix(bad[0], want) {
			t.Errorf("fault %v at %d: reported %q, want it first", f.P, f.Pos, bad)
		}
	}
}
