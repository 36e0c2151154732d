package metal

import (
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
	"github.com/lily-engine/lily/internal/safetensors"
	"github.com/lily-engine/lily/metal/device"
)

// limitedDevice is the plan-only emulator device reporting the limits a smaller Mac would.
type limitedDevice struct {
	*device.EmuDevice
	lim device.Limits
}

func (d limitedDevice) Limits() device.Limits { return d.lim }

// TestMemoryRefusal loads the test checkpoint on devices whose working set or largest buffer is
// too small: newModel must refuse before uploading, naming the numbers and iogpu.wired_limit_mb;
// with room to spare it loads; with room for a smaller chunk only it loads with that chunk.
func TestMemoryRefusal(t *testing.T) {
	w := openTest(t, "mlx").Weights
	probe, err := newModel(w, &device.EmuDevice{}, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if probe.chunk != maxChunk {
		t.Errorf("chunk %d with unbounded memory, want %d", probe.chunk, maxChunk)
	}
	f := probe.footprint(w)
	probe.chunk = minChunk
	fmin := probe.footprint(w) // the smallest footprint: at minChunk
	probe.Close()
	if f.KV != KVBytes(w.Config, 4096) || f.Weights <= 0 || f.State <= 0 || f.Buffers <= 0 || fmin.Total() >= f.Total() {
		t.Fatalf("footprint %+v, at the smallest chunk %+v", f, fmin)
	}
	half, err := newModel(w, limitedDevice{&device.EmuDevice{}, device.Limits{WorkingSet: f.Total() - 1, MaxBufferLength: 1 << 40}}, 4096)
	if err != nil {
		t.Fatalf("a working set one byte short of the %d-token chunk's: %v", maxChunk, err)
	}
	if half.chunk != maxChunk/2 {
		t.Errorf("a working set one byte short of the %d-token chunk's gives chunk %d, want %d", maxChunk, half.chunk, maxChunk/2)
	}
	half.Close()
	for _, c := range []struct {
		name string
		lim  device.Limits
		want []string // "" means it loads
	}{
		{"fits", device.Limits{WorkingSet: 2 * f.Total(), MaxBufferLength: f.Largest}, nil},
		{"working set", device.Limits{WorkingSet: fmin.Total() - 1, MaxBufferLength: 1 << 40},
			[]string{"recommendedMaxWorkingSetSize", "iogpu.wired_limit_mb", "--ctx-size 4096", gib(fmin.Total()), gib(fmin.Total() - 1)}},
		{"buffer length", device.Limits{WorkingSet: 1 << 40, MaxBufferLength: fmin.Largest - 1},
			[]string{"maxBufferLength", gib(fmin.Largest), fmin.LargestWhat}},
	} {
		e, err := newModel(w, limitedDevice{&device.EmuDevice{}, c.lim}, 4096)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			} else {
				e.Close()
			}
			continue
		}
		if err == nil {
			e.Close()
			t.Errorf("%s: loaded on a device with limits %+v (needs %+v)", c.name, c.lim, f)
			continue
		}
		for _, s := range c.want {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not name %q", c.name, err, s)
			}
		}
	}
}

// TestKVCacheAt128K computes the real model's KV cache at 128K tokens: 10 attention layers × K and
// V × 131,072 tokens × 2 KV heads × 256 dims × 2 bytes (fp16) = 2.5 GiB, half what float32 held.
func TestKVCacheAt128K(t *testing.T) {
	cfg, err := checkpoint.ParseConfig(checkpointtest.Real().ConfigJSON("mlx"), nil)
	if err != nil {
		t.Fatal(err)
	}
	const want = 10 * 2 * 131072 * 2 * 256 * 2
	if got := KVBytes(cfg, 131072); got != want || want != 5<<29 {
		t.Fatalf("KV cache at 128K: %d bytes, want %d (2.5 GiB)", got, want)
	}
}

// TestRealModelChunk sizes the real model's prefill chunk from its footprint (the text weights'
// bytes from the real layout's tensor specs, the KV cache at the full 262,144-token context):
// 2,048 tokens on a 64 GB Mac's working set (48 GB), smaller where only that fits, and a refusal
// where not even the smallest chunk does.
func TestRealModelChunk(t *testing.T) {
	r := checkpointtest.Real()
	cfg, err := checkpoint.ParseConfig(r.ConfigJSON("mlx"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var weights int64
	for _, s := range r.Specs("mlx") {
		n := int64(2) // BF16
		if s.DType == safetensors.U32 {
			n = 4
		}
		for _, d := range s.Shape {
			n *= int64(d)
		}
		weights += n
	}
	e := &Model{cfg: cfg, maxCtx: cfg.MaxPositionEmbeddings, topK: HeadTopK, sizes: newSizes(cfg)}
	e.sizes.routerLanes, e.sizes.topkLanes, e.sizes.mergeLanes = 1024, 1024, 1024
	foot := func() Footprint { return e.footprintWith(weights, 0, "") }
	f, err := e.sizeChunk(foot, device.Limits{WorkingSet: 48 << 30, MaxBufferLength: 16 << 30})
	if err != nil || e.chunk != 2048 {
		t.Fatalf("real model at %d tokens of context on a 48 GB working set: chunk %d (%v), want 2048", e.maxCtx, e.chunk, err)
	}
	t.Logf("real model, chunk %d: weights %s, KV %s, buffers %s", e.chunk, gib(f.Weights), gib(f.KV), gib(f.Buffers))
	e.chunk = minChunk
	fmin := foot()
	if _, err := e.sizeChunk(foot, device.Limits{WorkingSet: f.Total() - 1}); err != nil || e.chunk != 1024 {
		t.Errorf("a working set one byte short: chunk %d (%v), want 1024", e.chunk, err)
	}
	if _, err := e.sizeChunk(foot, device.Limits{WorkingSet: fmin.Total() - 1}); err == nil {
		t.Errorf("a working set one byte short of the %d-token chunk's loads with chunk %d", minChunk, e.chunk)
	}
}
