package metal

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/engine/enginetest"
	"github.com/lily-engine/lily/metal/device"
	"github.com/lily-engine/lily/ref"
)

// TestLowPipelineLimits runs the engine on an emulator whose router_softmax_topk and logits_topk_part/_merge pipelines
// allow fewer than 1,024 threads (as a Metal pipeline that needs many registers reports): the plans
// must size those dispatches to the limit (the emulator refuses larger ones, as Metal does), and the
// logits and top-k must still match ref.
func TestLowPipelineLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kernel emulator with g++; skipped in -short")
	}
	ck := openTest(t, "mlx")
	dev, err := device.NewEmuDeviceOptions(device.EmuOptions{MaxThreads: map[string]int{"router_softmax_topk": 64, "logits_topk_part": 96, "logits_topk_merge": 64}})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if n, err := dev.MaxThreads("router_softmax_topk"); err != nil || n != 64 {
		t.Fatalf("router_softmax_topk limit %d, %v", n, err)
	}
	over := &device.Dispatch{Kernel: "logits_topk_part", Groups: grid(1, 1, 1), Threads: grid(128, 1, 1),
		Args: []device.Arg{inline(make([]byte, 4)), inline(make([]byte, 4)), inline(make([]byte, 4)), inline(make([]byte, 8)), inline(PackDims(1, 1, 16*128, 1))}}
	if err := dev.Run([]device.Command{over}); err == nil || !strings.Contains(err.Error(), "allows 96") {
		t.Fatalf("a dispatch over the pipeline's limit: %v", err)
	}
	e, err := newModel(ck.Weights, dev, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.sizes.routerLanes != 64 || e.sizes.topkLanes != 96 || e.sizes.mergeLanes != 64 {
		t.Fatalf("lanes %d/%d/%d, want 64/96/64", e.sizes.routerLanes, e.sizes.topkLanes, e.sizes.mergeLanes)
	}
	rm, err := ref.New(ck.Weights)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := e.newSession()
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	ctx := context.Background()
	p := enginetest.RandomTokens(5, 256, 9)
	want, err := engine.Logits(rm.NewSession().Prefill(ctx, p, engine.StepOptions{Full: true}, nil))
	if err != nil {
		t.Fatal(err)
	}
	got, err := engine.Logits(ms.Prefill(ctx, p, engine.StepOptions{Full: true}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if d := enginetest.SpreadDiff(want, got); d > logitTol {
		t.Fatalf("logits differ by %g of their range", d)
	}
	top, err := ms.readback(engine.StepOptions{TopK: e.topK}) // the GPU's top-k of the same step
	if err != nil {
		t.Fatal(err)
	}
	ids := top.TopIDs
	order := make([]int32, len(want))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		switch {
		case want[a] > want[b]:
			return -1
		case want[a] < want[b]:
			return 1
		}
		return 0
	})
	if ids[0] != order[0] {
		t.Fatalf("top-1 %d, ref's argmax %d", ids[0], order[0])
	}
}

// TestHeadTopKCoversDefaultSampling: the model's default sampling (top_k 20) is served from the GPU's
// top-k, not from a read-back of the whole vocabulary.
func TestHeadTopKCoversDefaultSampling(t *testing.T) {
	if k := engine.ModelDefaults().TopK; k > HeadTopK {
		t.Fatalf("default sampling's top_k %d exceeds the head's %d: every sampled token reads back the logits", k, HeadTopK)
	}
}
