package metal

import (
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
	"github.com/lily-engine/lily/metal/device"
)

// realPattern is the real model's layer pattern (40 layers, every fourth one attention) and its
// quantization, at tiny widths: the plans' dispatches and messages are the real model's.
func realPattern(t *testing.T) *checkpoint.Weights {
	t.Helper()
	d := checkpointtest.TinyG64()
	r := checkpointtest.Real()
	d.LayerTypes, d.Bits, d.GroupSize, d.GateBits = r.LayerTypes, r.Bits, r.GroupSize, r.GateBits
	dir := t.TempDir()
	if err := checkpointtest.Write(dir, d.ConfigJSON("mlx"), d.Specs("mlx"), 2, 7); err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	return ck.Weights
}

// Budgets for the real model's decode token (issue 16 measured ~450 dispatches and ~4,100
// reflective calls before the typed bridge): the encoding must stay within them. The router's
// mat-vec and its top-k are two dispatches per layer since the qmv_fast router, the head's top-k
// two, and the RMSNorms are fused into the mat-vecs that read them (444 in all).
const (
	maxDecodeDispatches = 450
	maxDecodeCalls      = 2100
	// maxDispatchesPerLayer bounds one decoder layer of a decode token (mixer, MoE; no norms).
	maxDispatchesPerLayer = 11
)

// TestDecodeMatVecPlan checks the decode token's mat-vec dispatches on the real pattern (4-bit
// weights, 8-bit router): every input projection and the lm_head through qmv_norm_4 (the norm
// fused), the output projections through qmv_add_4, per layer one router_qmv_norm_8, one
// router_softmax_topk, one moe_gate_up_norm_4 and one moe_down_4, the head's split top-k once, and
// no rms_norm, generic or GEMM kernel.
func TestDecodeMatVecPlan(t *testing.T) {
	w := realPattern(t)
	pc, err := CountPlans(w)
	if err != nil {
		t.Fatal(err)
	}
	L := w.Config.NumLayers
	nG, nA := w.Config.NumLayersOf(checkpoint.LinearAttention), w.Config.NumLayersOf(checkpoint.FullAttention)
	want := map[string]int{
		"qmv_norm_4":          4*nG + 3*nA + 1, // in_proj qkv/z/b/a, q/k/v, lm_head, each norming h
		"qmv_add_4":           L,               // out_proj, o_proj
		"router_qmv_norm_8":   L,
		"router_softmax_topk": L,
		"moe_gate_up_norm_4":  L,
		"moe_down_4":          L,
		"logits_topk_part":    1,
		"logits_topk_merge":   1,
		"rms_norm":            0, // fused into the mat-vecs above
		"qmv_4":               0,
		"router_qmv_8":        0,
		"moe_gate_up_4":       0,
	}
	for k, n := range want {
		if got := pc.Decode.Kernels[k].Dispatches; got != n {
			t.Errorf("%s: %d dispatches per decode token, want %d", k, got, n)
		}
	}
	for _, k := range []string{"qmm_t32", "qmv_8", "qmv_add_8", "moe_gate_up_8", "moe_down_8", "router_qmv_4"} {
		if n := pc.Decode.Kernels[k].Dispatches; n != 0 {
			t.Errorf("%s: %d dispatches in a decode token of a 4-bit model with an 8-bit router", k, n)
		}
	}
	if got := pc.Prefill.Kernels["router_softmax_topk"].Dispatches; got != L {
		t.Errorf("router_softmax_topk: %d dispatches per prefill chunk, want %d", got, L)
	}
}

func TestPlanCountsRealPattern(t *testing.T) {
	w := realPattern(t)
	pc, err := CountPlans(w)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("decode: %+v", pc.Decode)
	t.Logf("prefill chunk of %d: %+v", pc.Chunk, pc.Prefill)
	d := pc.Decode
	if d.Dispatches > maxDecodeDispatches || d.Calls > maxDecodeCalls {
		t.Errorf("decode token: %d dispatches, %d calls; budget %d, %d", d.Dispatches, d.Calls, maxDecodeDispatches, maxDecodeCalls)
	}
	if per := (d.Dispatches - 4) / w.Config.NumLayers; per > maxDispatchesPerLayer {
		t.Errorf("%d dispatches per layer, budget %d", per, maxDispatchesPerLayer)
	}
	for name, c := range map[string]device.Counts{"decode": pc.Decode.Counts, "prefill": pc.Prefill.Counts, "last prefill": pc.PrefillLast.Counts} {
		if b := device.CallBound(c.Dispatches+c.Copies, c.CommandBuffers); c.Calls > b {
			t.Errorf("%s: %d calls for %d dispatches in %d command buffers, bound %d", name, c.Calls, c.Dispatches, c.CommandBuffers, b)
		}
		if c.Barriers >= c.Dispatches {
			t.Errorf("%s: %d barriers for %d dispatches: no dispatches overlap", name, c.Barriers, c.Dispatches)
		}
		if c.CommandBuffers < 2 {
			t.Errorf("%s: one command buffer: the GPU waits for the whole encoding", name)
		}
	}
	if pc.PrefillLast.Dispatches <= pc.Prefill.Dispatches {
		t.Errorf("the last chunk (%d dispatches) should add the head to a chunk (%d)", pc.PrefillLast.Dispatches, pc.Prefill.Dispatches)
	}
}

// TestPlanCountsMatchPlan checks the counts against the plan itself: every dispatch of the decode
// plan is encoded once.
func TestPlanCountsMatchPlan(t *testing.T) {
	e, err := newModel(openTest(t, "mlx").Weights, &device.EmuDevice{}, 512)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	pc, err := e.PlanCounts()
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.newSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	for _, c := range s.decodePlan() {
		if _, ok := c.(*device.Dispatch); ok {
			n++
		}
	}
	if pc.Decode.Dispatches != n {
		t.Errorf("counted %d dispatches, the plan has %d", pc.Decode.Dispatches, n)
	}
}

// TestPrefillGEMMPlan checks a prefill chunk's GEMMs on the real pattern: every projection through
// qmm_t32 (DeltaNet in_proj qkv/z/b/a and out_proj, attention q/k/v and o_proj, the router and
// shared gate, the shared expert's three), per layer one moe_tiles and one of each tile32 expert
// GEMM whose grid is the work-list bound, the lm_head (a mat-vec on the last row) and its top-k
// only in the prompt's last chunk, and none of
// the 8×8 kernels the tile32 ones replaced.
func TestPrefillGEMMPlan(t *testing.T) {
	w := realPattern(t)
	pc, err := CountPlans(w)
	if err != nil {
		t.Fatal(err)
	}
	if pc.Chunk != min(maxChunk, w.Config.MaxPositionEmbeddings) {
		t.Errorf("chunk %d, want %d", pc.Chunk, min(maxChunk, w.Config.MaxPositionEmbeddings))
	}
	L := w.Config.NumLayers
	nG, nA := w.Config.NumLayersOf(checkpoint.LinearAttention), w.Config.NumLayersOf(checkpoint.FullAttention)
	qmms := 5*nG + 4*nA + 5*L
	d := w.Config.Dims()
	bound := moeTileBound(pc.Chunk*d.TopK, d.E)
	for k, want := range map[string]struct{ mid, last, groups int }{
		"qmm_t32":              {qmms, qmms, -1},
		"qmv_norm_4":           {0, 1, -1}, // the final norm and lm_head on the last row
		"logits_topk_part":     {0, 1, -1},
		"moe_tiles":            {L, L, L},
		"moe_gemm_t32_gate_up": {L, L, L * cdiv(d.I, gemmTile) * bound},
		"moe_gemm_t32_down":    {L, L, L * cdiv(d.H, gemmTile) * bound},
	} {
		mid, last := pc.Prefill.Kernels[k], pc.PrefillLast.Kernels[k]
		if mid.Dispatches != want.mid || last.Dispatches != want.last {
			t.Errorf("%s: %d dispatches per chunk, %d in the last; want %d, %d", k, mid.Dispatches, last.Dispatches, want.mid, want.last)
		}
		if want.groups >= 0 && mid.Groups != want.groups {
			t.Errorf("%s: %d threadgroups per chunk, want %d", k, mid.Groups, want.groups)
		}
	}
	for _, k := range []string{"qmm", "moe_gemm_gate_up", "moe_gemm_down"} {
		if n := pc.Prefill.Kernels[k].Dispatches + pc.PrefillLast.Kernels[k].Dispatches; n != 0 {
			t.Errorf("%s: %d dispatches of a replaced kernel", k, n)
		}
	}
}
