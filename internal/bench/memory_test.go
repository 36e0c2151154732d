package bench

import (
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/synth"
)

// machineBytes is the memory of the machine issue 21 targets: 128K context of the full 40-layer
// model on a 24 GB computer.
const machineBytes = 24e9

// longContext is the context the budget must hold: 128K positions.
const longContext = 131072

// prefillChunk mirrors fast's prefill chunk (1,024 tokens), the size the activations scale with.
const prefillChunk = 1024

// qwenDims are the real model's sizes, from the config.json synth writes for it, and the bytes of
// its 4-bit MLX checkpoint.
func qwenDims(t *testing.T) (checkpoint.Dims, int64) {
	t.Helper()
	c, err := synth.Preset(synth.PresetQwen)
	if err != nil {
		t.Fatal(err)
	}
	p, err := synth.NewPlan(c, synth.LayoutMLX, 0)
	if err != nil {
		t.Fatal(err)
	}
	js, err := p.ConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := checkpoint.ParseConfig(js, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Dims(), p.TotalBytes()
}

// TestMemory128KFits asserts issue 21's budget: the full 40-layer 4-bit model with an fp16 KV cache
// at 128K context, its DeltaNet state, the prefill buffers and the server's prompt-cache snapshot
// (a second DeltaNet state; its KV rows are shared) fit in 24 GB; with float32 K/V (5.4 GB) they
// would not, nor would a snapshot that copied the fp16 KV (2.7 GB more).
func TestMemory128KFits(t *testing.T) {
	s, weights := qwenDims(t)
	fp16 := MemoryAt(s, weights, longContext, prefillChunk, 2)
	t.Logf("fp16 KV at %d: %v", longContext, fp16)
	if fp16.Total() > machineBytes {
		t.Errorf("fp16 KV at 128K needs %.2f GB, over %.0f GB", float64(fp16.Total())/1e9, machineBytes/1e9)
	}
	// The parts against hand-computed figures (model.md §1.1): 10 attention layers × 2 (K, V) × 2 KV
	// heads × 256 × 2 bytes = 20 KiB per position; 30 DeltaNet layers × (32·128·128 + 8192·3) floats.
	if want := int64(longContext) * 20 << 10; fp16.KV != want {
		t.Errorf("KV %d bytes, want %d", fp16.KV, want)
	}
	if want := int64(30 * 4 * (32*128*128 + 8192*3)); fp16.State != want || fp16.Snapshot != want {
		t.Errorf("state %d and snapshot %d bytes, want %d", fp16.State, fp16.Snapshot, want)
	}
	if cloned := fp16.Total() + fp16.KV; cloned <= machineBytes {
		t.Errorf("a snapshot that copied the KV fits too (%.2f GB): the budget no longer needs shared KV rows", float64(cloned)/1e9)
	}
	fp32 := MemoryAt(s, weights, longContext, prefillChunk, 4)
	t.Logf("float32 KV at %d: %v", longContext, fp32)
	if fp32.Total() <= machineBytes {
		t.Errorf("float32 KV fits too (%v): the budget no longer needs the half-size cache", fp32)
	}
}

func TestMemoryScales(t *testing.T) {
	s, weights := qwenDims(t)
	a, b := MemoryAt(s, weights, 1000, 64, 2), MemoryAt(s, weights, 2000, 128, 2)
	if b.KV != 2*a.KV || b.State != a.State || b.Buffers <= a.Buffers || a.Weights != weights {
		t.Fatalf("%v then %v", a, b)
	}
}
