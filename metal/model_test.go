package metal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/engine/enginetest"
	"github.com/lily-engine/lily/metal/device"
	"github.com/lily-engine/lily/ref"
)

func openTest(t *testing.T, layout string) *checkpoint.Checkpoint {
	t.Helper()
	d := checkpointtest.TinyG64()
	dir := t.TempDir()
	if err := checkpointtest.Write(dir, d.ConfigJSON(layout), d.Specs(layout), 2, 7); err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	return ck
}

// emuTestModel is the tiny MLX test checkpoint (openTest) as a Model on a fresh emulator device,
// with sessions of up to maxCtx tokens and a prefill chunk of 4 (so that short prompts cross
// chunks); the test skips in -short, and everything is closed at its end.
func emuTestModel(t *testing.T, maxCtx int) (*checkpoint.Checkpoint, *Model) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the kernel emulator with g++ and runs it slowly; skipped in -short")
	}
	ck := openTest(t, "mlx")
	dev, err := device.NewEmuDevice()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	e, err := newModel(ck.Weights, dev, maxCtx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	e.chunk = 4
	return ck, e
}

// TestEngineChunksAndEach runs a prefill across several chunks with every position's logits
// requested, then decodes, on the emulator, against ref; a small chunk makes the prefill cross
// chunks.
func TestEngineChunksAndEach(t *testing.T) {
	ck, e := emuTestModel(t, 64) // 10 tokens: chunks of 4, 4, 2
	rm, err := ref.New(ck.Weights)
	if err != nil {
		t.Fatal(err)
	}
	rs := rm.NewSession()
	ms, err := e.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	ctx := context.Background()
	p := enginetest.RandomTokens(10, 256, 3)
	var want [][]float32
	if _, err := rs.Prefill(ctx, p, engine.StepOptions{}, func(i int, l []float32) error {
		want = append(want, append([]float32(nil), l...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	seen := 0
	last, err := engine.Logits(ms.Prefill(ctx, p, engine.StepOptions{Full: true}, func(i int, l []float32) error {
		if i != seen {
			t.Fatalf("position %d reported as %d", seen, i)
		}
		if d := enginetest.SpreadDiff(want[i], l); d > logitTol {
			t.Errorf("position %d: logits differ by %g of their range", i, d)
		}
		seen++
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(p) || enginetest.SpreadDiff(want[len(p)-1], last) > logitTol {
		t.Fatalf("saw %d positions; last logits differ by %g", seen, enginetest.SpreadDiff(want[len(p)-1], last))
	}
	for _, tok := range []int32{17, 4, 99} {
		rl, _ := engine.Logits(rs.Decode(ctx, tok, engine.StepOptions{Full: true}))
		ml, err := engine.Logits(ms.Decode(ctx, tok, engine.StepOptions{Full: true}))
		if err != nil {
			t.Fatal(err)
		}
		if d := enginetest.SpreadDiff(rl, ml); d > logitTol {
			t.Fatalf("decode at %d after chunked prefill: logits differ by %g of their range", ms.Len()-1, d)
		}
	}
}

// logitTol bounds |metal − ref| relative to the logits' spread: the KV cache rounds keys and values
// to fp16 (2^-11 relative), which dominates float32 summation order (measured 1.7e-4 here; 2.5e-3
// with a bf16 cache).
const logitTol = 1e-3

// TestNewModelRejects checks the errors for checkpoints the kernels cannot run. The zero
// EmuDevice allocates and wraps without the emulator process, so no g++ is needed.
func TestNewModelRejects(t *testing.T) {
	dev := &device.EmuDevice{}
	if _, err := newModel(nil, dev, 0); err == nil {
		t.Error("nil weights accepted")
	}
	if _, err := newModel(openTest(t, "mlx").Weights, nil, 0); err == nil {
		t.Error("nil device accepted")
	}
	_, err := newModel(openTest(t, "hf").Weights, dev, 0)
	if !errors.Is(err, ErrDenseLayout) {
		t.Errorf("dense checkpoint: %v, want ErrDenseLayout", err)
	}
	d := checkpointtest.Tiny() // group size 32
	dir := t.TempDir()
	if err := checkpointtest.Write(dir, d.ConfigJSON("mlx"), d.Specs("mlx"), 1, 1); err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	if _, err := newModel(ck.Weights, dev, 0); err == nil || !strings.Contains(err.Error(), "group size 32") {
		t.Errorf("group size 32: %v", err)
	}
	e, err := newModel(openTest(t, "mlx").Weights, dev, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e.MaxContext() != 262144 || e.VocabSize() != 256 || e.Name() != "metal-emu" {
		t.Errorf("engine reports %d/%d/%s", e.MaxContext(), e.VocabSize(), e.Name())
	}
}

// TestRunChecksCommands checks that malformed command buffers are errors before they reach a
// device, not faults.
func TestRunChecksCommands(t *testing.T) {
	dev := &device.EmuDevice{}
	b, err := dev.Alloc(64, device.Private)
	if err != nil {
		t.Fatal(err)
	}
	for name, cmd := range map[string]device.Command{
		"window past the end": &device.Dispatch{Kernel: "swiglu", Groups: grid(1, 1, 1), Threads: grid(32, 1, 1),
			Args: []device.Arg{{Buf: b, Off: 32, Len: 64}, {Buf: b}, inline(PackDims(1))}},
		"unbound buffer": &device.Dispatch{Kernel: "swiglu", Groups: grid(1, 1, 1), Threads: grid(32, 1, 1),
			Args: []device.Arg{{Buf: b}, {}, inline(PackDims(1))}},
		"too many threads":  &device.Dispatch{Kernel: "swiglu", Groups: grid(1, 1, 1), Threads: grid(2048, 1, 1)},
		"empty grid":        &device.Dispatch{Kernel: "swiglu", Groups: grid(0, 1, 1), Threads: grid(32, 1, 1)},
		"copy past the end": &device.Copy{Src: b, Dst: b, SrcOff: 32, N: 64},
	} {
		if err := device.Check([]device.Command{cmd}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := dev.Alloc(0, device.Shared); err == nil {
		t.Error("zero-byte alloc accepted")
	}
	if err := dev.Upload(b, 60, make([]byte, 8)); err == nil {
		t.Error("upload past the end accepted")
	}
}

// TestWeightWindows checks that every weight argument holds its tensor's bytes at the shift the
// kernels are given, for tensors in mapped files (one wrap per file, windows at offsets, widened to
// whole 4-byte words) and in memory (one wrap each, unshifted).
func TestWeightWindows(t *testing.T) {
	for _, inMemory := range []bool{false, true} {
		w := openTest(t, "mlx").Weights
		if inMemory {
			each(w, func(m *checkpoint.Matrix) {
				m.W.File, m.Scales.File, m.Biases.File = "", "", ""
			})
		}
		dev := &device.EmuDevice{}
		e, err := newModel(w, dev, 0)
		if err != nil {
			t.Fatal(err)
		}
		qs := e.mats()
		i := 0
		each(w, func(m *checkpoint.Matrix) {
			q := qs[i]
			i++
			for _, p := range []struct {
				a  device.Arg
				sh int
				t  checkpoint.Tensor
			}{{q.w, q.wsh, m.W}, {q.s, q.ssh, m.Scales}, {q.b, q.bsh, m.Biases}} {
				got := make([]byte, p.a.Len)
				if err := dev.Download(got, p.a.Buf, p.a.Off); err != nil {
					t.Fatal(err)
				}
				if inMemory && (p.sh != 0 || p.a.Len != len(p.t.Data)) || p.a.Len < p.sh+len(p.t.Data) ||
					!bytes.Equal(got[p.sh:p.sh+len(p.t.Data)], p.t.Data) {
					t.Fatalf("in memory %v: %s (%s): the window holds other bytes", inMemory, m.Name, p.t.Name)
				}
			}
		})
		if i != len(qs) {
			t.Fatalf("%d matrices, %d device matrices", i, len(qs))
		}
		l0 := &e.w.layers[0]
		got := make([]byte, l0.inNorm.Len)
		if err := dev.Download(got, l0.inNorm.Buf, l0.inNorm.Off); err != nil {
			t.Fatal(err)
		}
		for j, v := range w.Layers[0].InputNorm {
			if g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*j:])); g != v {
				t.Fatalf("input norm[%d] = %g on the device, %g in the weights", j, g, v)
			}
		}
	}
}
