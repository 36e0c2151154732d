package perfmodel

import (
	"math"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/metal"
)

// realPlans counts the engine's plans for the real model at its real sizes, from a sparse
// real-size checkpoint (no weight bytes are read).
func realPlans(t *testing.T) (*checkpoint.Config, metal.PlanCounts) {
	t.Helper()
	if testing.Short() {
		t.Skip("maps a sparse real-size checkpoint (19.5 GB apparent size) and builds its plans; skipped in -short")
	}
	dir := t.TempDir()
	writeSparseCheckpoint(t, dir, "mlx")
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	pc, err := metal.CountPlans(ck.Weights)
	if err != nil {
		t.Fatal(err)
	}
	return ck.Config, pc
}

// fakePlan is a plan that dispatches exactly the kernels cs prices, once each, 64 groups each.
func fakePlan(cs []Cost) metal.PlanCost {
	pc := metal.PlanCost{Kernels: map[string]metal.Launches{}}
	for _, c := range cs {
		pc.Kernels[c.Kernel] = metal.Launches{Dispatches: 1, Groups: 64}
		pc.Dispatches++
	}
	pc.Barriers, pc.Passes, pc.Calls = pc.Dispatches/2, 1, 4*pc.Dispatches
	return pc
}

// TestHonestRequiresTheSameKernels: the model refuses to price a plan that dispatches a kernel
// its cost table does not price, or a cost table whose kernel the plan no longer dispatches, or
// a kernel without design figures.
func TestHonestRequiresTheSameKernels(t *testing.T) {
	cfg := realConfig(t)
	cs, err := DecodeCosts(cfg, 256)
	if err != nil {
		t.Fatal(err)
	}
	pc := fakePlan(cs)
	h := NewHonest(M5MaxGPU(), cfg, metal.PlanCounts{Chunk: 128, Decode: pc})
	if _, err := h.Decode(256); err != nil {
		t.Fatalf("matching plan: %v", err)
	}
	extra := fakePlan(cs)
	extra.Kernels["new_kernel"] = metal.Launches{Dispatches: 1, Groups: 1}
	h.Plans.Decode = extra
	if _, err := h.Decode(256); err == nil {
		t.Error("a plan kernel the cost table does not price: no error")
	}
	fewer := fakePlan(cs)
	delete(fewer.Kernels, "router_softmax_topk")
	h.Plans.Decode = fewer
	if _, err := h.Decode(256); err == nil {
		t.Error("a priced kernel the plan does not dispatch: no error")
	}
	h.Plans.Decode = pc
	delete(h.Designs, "qmv_norm_4")
	if _, err := h.Decode(256); err == nil {
		t.Error("a kernel without a design: no error")
	}
}

// TestHonestOnRealPlans checks the honest model against what must hold whatever the assumptions:
// it is slower than the roofline at every length; its terms are non-negative and add up; a serial
// encoder is slower than the concurrent one; a larger chunk re-reads fewer experts and is faster.
func TestHonestOnRealPlans(t *testing.T) {
	cfg, pc := realPlans(t)
	h := NewHonest(M5MaxGPU(), cfg, pc)
	r, err := h.AtLengths(-1)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range r.Lengths {
		d, _, err := Predict(M5Max(), cfg, n)
		if err != nil {
			t.Fatal(err)
		}
		if r.Decode[i] >= d {
			t.Errorf("decode at %d: honest %.0f tok/s not below the roofline's %.0f", n, r.Decode[i], d)
		}
		b, err := h.Decode(n)
		if err != nil {
			t.Fatal(err)
		}
		for term, v := range b {
			if v < 0 || math.IsNaN(v) {
				t.Errorf("decode at %d: %s = %g", n, Term(term), v)
			}
		}
		if got := 1 / b.Total(); math.Abs(got-r.Decode[i]) > 1e-9*got {
			t.Errorf("decode at %d: terms give %g tok/s, AtLengths %g", n, got, r.Decode[i])
		}
	}
	con, err := h.Decode(256)
	if err != nil {
		t.Fatal(err)
	}
	h.Serial = true
	ser, err := h.Decode(256)
	h.Serial = false
	if err != nil {
		t.Fatal(err)
	}
	if ser.Total() <= con.Total() {
		t.Errorf("serial encoder %.0f µs, concurrent %.0f µs: barriers should save steps", ser.Total()*1e6, con.Total()*1e6)
	}
	h.Chunk = 2048
	big, err := h.Prefill(8192)
	if err != nil {
		t.Fatal(err)
	}
	h.Chunk = 128
	small, err := h.Prefill(8192)
	h.Chunk = 0
	if err != nil {
		t.Fatal(err)
	}
	if big[TermRoofline] >= small[TermRoofline] {
		t.Errorf("prefill of 8K: roofline term %.0f ms at chunk 2048, %.0f ms at 128: larger chunks re-read fewer experts",
			big[TermRoofline]*1e3, small[TermRoofline]*1e3)
	}
	if _, err := h.Prefill(0); err == nil {
		t.Error("Prefill(0): no error")
	}
}

// TestDecodeGridFollowsContext: the decode plans are counted at position 0, but the engine splits a
// longer cache into more key ranges (metal.DecodeSplit); the model prices attn_decode_split with the
// grid of the context it is asked about, so long-context decode is not priced at two threadgroups.
func TestDecodeGridFollowsContext(t *testing.T) {
	cfg := realConfig(t)
	cs, err := DecodeCosts(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHonest(M5MaxGPU(), cfg, metal.PlanCounts{Chunk: 128, Decode: fakePlan(cs)})
	groups := func(ctx int) float64 {
		ks, err := h.DecodeKernels(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			if k.Kernel == "attn_decode_split" {
				return k.Groups
			}
		}
		t.Fatal("no attn_decode_split in the decode plan")
		return 0
	}
	for _, ctx := range []int{0, 255, 4095, 131071} {
		n := ctx + 1
		split := metal.DecodeSplit(n, cfg.NumKVHeads)
		want := float64(cfg.NumKVHeads * ((n + split - 1) / split))
		if got := groups(ctx); got != want {
			t.Errorf("context %d: attn_decode_split priced at %g threadgroups, the engine dispatches %g", ctx, got, want)
		}
	}
}
