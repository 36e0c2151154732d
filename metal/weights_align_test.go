package metal

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
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

// dataStart is where the data of ck's single shard starts in its file.
func dataStart(t *testing.T, ck *checkpoint.Checkpoint) uint64 {
	t.Helper()
	shards, _ := filepath.Glob(filepath.Join(ck.Dir, "*.safetensors"))
	if len(shards) != 1 {
		t.Fatalf("%d shards, want 1", len(shards))
	}
	f, err := os.Open(shards[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 8)
	if _, err := f.Read(head); err != nil {
		t.Fatal(err)
	}
	return 8 + binary.LittleEndian.Uint64(head)
}

// TestMisalignedShardIsZeroCopy loads synth's tiny MLX checkpoint with lily's padded headers and
// with MLX's unpadded ones. Either way the shard is wrapped in place once and nothing is copied;
// every weight window starts at the 4-byte floor of its tensor, ends at the ceiling of its end,
// and holds the tensor's bytes at the shift the kernels are told (wsh, ssh, bsh).
func TestMisalignedShardIsZeroCopy(t *testing.T) {
	for _, unpadded := range []bool{false, true} {
		ck := synthTiny(t, unpadded)
		if start := dataStart(t, ck); (start%4 != 0) != unpadded {
			t.Fatalf("unpadded %v: the shard's data starts at %d", unpadded, start)
		}
		dev := &device.EmuDevice{}
		e, err := newModel(ck.Weights, dev, 64)
		if err != nil {
			t.Fatal(err)
		}
		// total is the extent of the shard's quantized tensors (with the vectors between them),
		// widened to whole 4-byte words.
		lo, hi := ^uintptr(0), uintptr(0)
		quantTensors(ck.Weights, func(t *checkpoint.Tensor) {
			a := uintptr(unsafe.Pointer(unsafe.SliceData(t.Data)))
			lo, hi = min(lo, a&^3), max(hi, (a+uintptr(len(t.Data))+3)&^3)
		})
		want := WeightBytes{Wrapped: int64(hi - lo), Shards: 1}
		if unpadded {
			want.Misaligned = 1
		}
		if got := e.Weights(); got != want {
			t.Errorf("unpadded %v: %v, want %v", unpadded, got, want)
		}
		shifted := 0
		i := 0
		qs := e.mats()
		each(ck.Weights, func(m *checkpoint.Matrix) {
			q := qs[i]
			i++
			for _, p := range []struct {
				a  device.Arg
				sh int
				t  checkpoint.Tensor
			}{{q.w, q.wsh, m.W}, {q.s, q.ssh, m.Scales}, {q.b, q.bsh, m.Biases}} {
				addr := uintptr(unsafe.Pointer(unsafe.SliceData(p.t.Data)))
				if p.a.Off%4 != 0 || p.sh != int(addr%4) || p.a.Len != (p.sh+len(p.t.Data)+3)&^3 {
					t.Fatalf("unpadded %v: %s bound at %d, %d bytes, shift %d (tensor at address mod 4 = %d, %d bytes)",
						unpadded, p.t.Name, p.a.Off, p.a.Len, p.sh, addr%4, len(p.t.Data))
				}
				if p.sh != 0 {
					shifted++
				}
				b := make([]byte, p.a.Len)
				if err := dev.Download(b, p.a.Buf, p.a.Off); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b[p.sh:p.sh+len(p.t.Data)], p.t.Data) {
					t.Fatalf("unpadded %v: %s: the window holds other bytes", unpadded, p.t.Name)
				}
			}
		})
		if (shifted > 0) != unpadded {
			t.Errorf("unpadded %v: %d operands bound with a shift", unpadded, shifted)
		}
		e.Close()
	}
}

// TestUnpaddedShardGeneratesAsPadded runs the same prompt and greedy decode on the emulator device
// from the padded and the unpadded copy of one checkpoint: the kernels read the shifted operands
// through their loaders, so every logit must be bit-identical; the load log says nothing was copied.
func TestUnpaddedShardGeneratesAsPadded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kernel emulator with g++ and runs it slowly; skipped in -short")
	}
	dev, err := device.NewEmuDevice()
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	var runs [2][][]float32
	for i, unpadded := range []bool{false, true} {
		ck := synthTiny(t, unpadded)
		var log strings.Builder
		b, err := Open(ck.Weights, Options{Dev: dev, MaxContext: 64, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log.String(), " 0 bytes copied") {
			t.Errorf("unpadded %v: load log %q, want 0 bytes copied", unpadded, log.String())
		}
		s, err := b.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		l, err := engine.Logits(s.Prefill(ctx, []int32{1, 2, 3, 4, 5}, engine.StepOptions{Full: true}, nil))
		for step := 0; err == nil && step < 3; step++ {
			runs[i] = append(runs[i], append([]float32(nil), l...))
			l, err = engine.Logits(s.Decode(ctx, argmax(l), engine.StepOptions{Full: true}))
		}
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		b.Close()
	}
	for step := range runs[0] {
		for j, v := range runs[0][step] {
			if runs[1][step][j] != v {
				t.Fatalf("step %d: logit %d is %v from the unpadded shard, %v from the padded one", step, j, runs[1][step][j], v)
			}
		}
	}
}

// argmax is the id of the largest logit (the lower id on ties).
func argmax(l []float32) int32 {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	return int32(best)
}
