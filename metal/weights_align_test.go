package metal

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/synth"
	"github.com/lily-engine/lily/metal/device"
)

// synthTiny writes synth's tiny MLX checkpoint to a new directory, with MLX's unpadded safetensors
// headers when unpadded, and opens it.
func synthTiny(t *testing.T, unpadded bool) *checkpoint.Checkpoint {
	t.Helper()
	c, err := synth.Preset(synth.PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	p, err := synth.NewPlan(c, synth.LayoutMLX, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := synth.Write(context.Background(), p, dir, synth.Options{Seed: 3, UnpaddedHeaders: unpadded}); err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	return ck
}

// TestMisalignedShardIsCopiedOnce loads synth's tiny MLX checkpoint with lily's padded headers and
// with MLX's unpadded ones. The padded shard is bound in place (nothing copied); the unpadded
// shard, whose data starts at an offset that is not a multiple of 4, is copied once, whole, and not
// also wrapped. Either way every weight window holds exactly its tensor's bytes at an offset its
// kernel can load from (packed words 4-aligned, bf16 scales and biases 2-aligned).
func TestMisalignedShardIsCopiedOnce(t *testing.T) {
	for _, unpadded := range []bool{false, true} {
		ck := synthTiny(t, unpadded)
		shards, _ := filepath.Glob(filepath.Join(ck.Dir, "*.safetensors"))
		if len(shards) != 1 {
			t.Fatalf("%d shards, want 1", len(shards))
		}
		head := make([]byte, 8)
		f, err := os.Open(shards[0])
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Read(head)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if start := 8 + binary.LittleEndian.Uint64(head); (start%4 != 0) != unpadded {
			t.Fatalf("unpadded %v: the shard's data starts at %d", unpadded, start)
		}
		dev := &device.EmuDevice{}
		e, err := newModel(ck.Weights, dev, 64)
		if err != nil {
			t.Fatal(err)
		}
		// total is the extent of the shard's quantized tensors (with the vectors between them).
		lo, hi := ^uintptr(0), uintptr(0)
		quantTensors(ck.Weights, func(t *checkpoint.Tensor, _ uintptr) {
			a := uintptr(unsafe.Pointer(unsafe.SliceData(t.Data)))
			lo, hi = min(lo, a), max(hi, a+uintptr(len(t.Data)))
		})
		total := int64(hi - lo)
		got := e.Weights()
		want := WeightBytes{Wrapped: total, Shards: 1}
		if unpadded {
			want = WeightBytes{Copied: total, Shards: 1, Misaligned: 1}
		}
		if got != want {
			t.Errorf("unpadded %v: %v, want %v", unpadded, got, want)
		}
		i := 0
		qs := e.mats()
		each(ck.Weights, func(m *checkpoint.Matrix) {
			q := qs[i]
			i++
			for _, p := range []struct {
				a     device.Arg
				t     checkpoint.Tensor
				align int
			}{{q.w, m.W, 4}, {q.s, m.Scales, 2}, {q.b, m.Biases, 2}} {
				if p.a.Off%p.align != 0 {
					t.Fatalf("unpadded %v: %s at offset %d, not %d-aligned", unpadded, p.t.Name, p.a.Off, p.align)
				}
				b := make([]byte, p.a.Len)
				if err := dev.Download(b, p.a.Buf, p.a.Off); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b, p.t.Data) {
					t.Fatalf("unpadded %v: %s: the window holds other bytes", unpadded, p.t.Name)
				}
			}
		})
		e.Close()
	}
}
