package conformance

import (
	"errors"
	"os/exec"
	"runtime"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/metal"
	"github.com/lily-engine/lily/metal/device"
)

// metalLogitTol bounds |metal − ref| per logit relative to the logits' spread: the KV cache holds
// keys and values in fp16 (2^-11 relative rounding, measured up to 1.2e-4 here; a bf16 cache
// reaches 2.5e-3), the activations are float32 summed in the kernels' own orders.
const metalLogitTol = 5e-4

// metalLayerTol bounds each layer's mixer and MoE output against ref's on the same tokens
// (checkLayers), relative to ref's largest value: the fp16 KV cache's rounding (2^-11 per
// element) enters at the first attention layer and is carried on; the emulator measures up to
// 1.2e-3 (a MoE output after the fp16-cached attention of the random checkpoint).
const metalLayerTol = 3e-3

// Budgets of issue 6, the same as fast's: teacher-forced top-1 agreement and relative perplexity.
const (
	metalMinTop1     = 0.99
	metalMaxDeltaPPL = 0.005
)

// metalCheckpoint is the tiny model the kernels accept (checkpointtest.TinyG64) in layout.
func metalCheckpoint(t *testing.T, layout string) *checkpoint.Checkpoint {
	t.Helper()
	d := checkpointtest.TinyG64()
	dir := t.TempDir()
	if err := checkpointtest.Write(dir, d.ConfigJSON(layout), d.Specs(layout), 2, 11); err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	return ck
}

// argmaxGap is the index of the largest logit (lowest among equals) and its lead over the runner-up.
func argmaxGap(x []float32) (int32, float64) {
	best, second := 0, -1
	for i := 1; i < len(x); i++ {
		switch {
		case x[i] > x[best]:
			best, second = i, best
		case second < 0 || x[i] > x[second]:
			second = i
		}
	}
	return int32(best), float64(x[best]) - float64(x[second])
}

// TestMetalEngineEmulated runs the Metal engine's plans end to end on the kernel emulator and
// holds them to ref (see checkMetalEngine).
func TestMetalEngineEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the kernels for the CPU emulator with g++ and runs them slowly (~15 s); skipped in -short")
	}
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("the Metal kernel emulator needs g++, which is not installed")
	}
	dev, err := device.NewEmuDevice()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	checkMetalEngine(t, dev)
}

// TestMetalEngineGPU is the same check on the Metal GPU. It skips off darwin/arm64, where there is
// none; on an Apple Silicon Mac a device that does not open fails it.
func TestMetalEngineGPU(t *testing.T) {
	dev, err := device.NewMetalDevice()
	if errors.Is(err, device.ErrNoMetal) && (runtime.GOOS != "darwin" || runtime.GOARCH != "arm64") {
		t.Skipf("no Metal GPU here (%v); TestMetalEngineEmulated runs the same plans on the CPU", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	checkMetalEngine(t, dev)
}

// checkMetalEngine holds the Metal engine on dev to ref through the shared suite (checkBackend),
// and checks what only Metal does: the GPU's own top-k, and the rejection of a dense layout.
func checkMetalEngine(t *testing.T, dev device.Device) {
	open := func(w *checkpoint.Weights, maxCtx int) (engine.Backend, error) {
		return metal.Open(w, metal.Options{Dev: dev, MaxContext: maxCtx})
	}
	checkBackend(t, dev.Name(), open, backendBudget{logit: metalLogitTol, top1: metalMinTop1, dPPL: metalMaxDeltaPPL, layer: metalLayerTol})
	t.Run("rejects_dense_layout", func(t *testing.T) {
		hf := metalCheckpoint(t, "hf")
		_, err := metal.Open(hf.Weights, metal.Options{Dev: dev, MaxContext: 256})
		if !errors.Is(err, metal.ErrDenseLayout) {
			t.Fatalf("dense HF checkpoint: got %v, want ErrDenseLayout", err)
		}
	})
}
