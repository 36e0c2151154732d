package metal

import (
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
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
// with room to spare it loads.
func TestMemoryRefusal(t *testing.T) {
	w := openTest(t, "mlx").Weights
	probe, err := newModel(w, &device.EmuDevice{}, 4096)
	if err != nil {
		t.Fatal(err)
	}
	f := probe.footprint(w)
	probe.Close()
	if f.KV != KVBytes(w.Config, 4096) || f.Weights <= 0 || f.State <= 0 || f.Buffers <= 0 {
		t.Fatalf("footprint %+v", f)
	}
	for _, c := range []struct {
		name string
		lim  device.Limits
		want []string // "" means it loads
	}{
		{"fits", device.Limits{WorkingSet: 2 * f.Total(), MaxBufferLength: f.Largest}, nil},
		{"working set", device.Limits{WorkingSet: f.Total() - 1, MaxBufferLength: 1 << 40},
			[]string{"recommendedMaxWorkingSetSize", "iogpu.wired_limit_mb", "--ctx-size 4096", gib(f.Total()), gib(f.Total() - 1)}},
		{"buffer length", device.Limits{WorkingSet: 1 << 40, MaxBufferLength: f.Largest - 1},
			[]string{"maxBufferLength", gib(f.Largest), f.LargestWhat}},
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
