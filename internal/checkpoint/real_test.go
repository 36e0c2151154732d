package checkpoint

import (
	"math"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
)

// headerOnly describes a checkpoint by names, dtypes and shapes alone, as its safetensors
// headers would: matrices carry no data (the loader checks their shapes and never reads them);
// vectors and conv weights get zeroed data, which is small.
func headerOnly(specs []checkpointtest.Spec) map[string]Tensor {
	ts := make(map[string]Tensor, len(specs))
	for _, s := range specs {
		t := Tensor{Name: s.Name, File: "header-only", DType: s.DType, Shape: s.Shape}
		if n := numel(s.Shape); n <= 1<<16 && s.DType.Size() == 2 {
			t.Data = make([]byte, 2*n)
		}
		ts[s.Name] = t
	}
	return ts
}

// TestRealCheckpointFigures builds the full-size Qwen3.6-35B-A3B weights from header-only
// descriptions of both layouts and checks the published figures: the mlx-community 4-bit text
// tensors total exactly 19,508,787,456 bytes (model.md §2.3), ~34.66 B parameters, ~2.95 B active.
func TestRealCheckpointFigures(t *testing.T) {
	d := checkpointtest.Real()
	stats := map[string]Stats{}
	for _, layout := range []string{"mlx", "hf"} {
		cfg, err := ParseConfig(d.ConfigJSON(layout), nil)
		noErr(t, err)
		specs := d.Specs(layout)
		w, l, err := build(cfg, headerOnly(specs))
		noErr(t, err)
		eq(t, w.Layout.String(), layout)
		s := computeStats(w, l)
		eq(t, s.Tensors, len(specs))
		eq(t, s.BytesTotal, specBytes(specs))
		eq(t, s.DecodeBytesPerToken, decodeBytes(d, specs, false))
		stats[layout] = s
	}
	mlx, hf := stats["mlx"], stats["hf"]
	eq(t, mlx.BytesTotal, int64(19_508_787_456))
	eq(t, mlx.ParamsTotal, hf.ParamsTotal)
	eq(t, mlx.ParamsActive, hf.ParamsActive)
	eq(t, hf.BytesTotal, 2*hf.ParamsTotal) // all bf16
	eq(t, math.Round(float64(mlx.ParamsTotal)/1e7)/100, 34.66)
	eq(t, math.Round(float64(mlx.ParamsActive)/1e7)/100, 2.95)
	eq(t, mlx.Quantization.Overrides, 80)
	eq(t, mlx.Quantization.OverrideBits, map[int]int{8: 80})
	// A routed expert is 3 x (524,288 packed + 2 x 65,536 scale/bias) = 1,769,472 bytes, as
	// measured on the real checkpoint; a decode step reads top-8 of them in each of 40 layers.
	const expertBytes = 1_769_472
	routedAll := int64(40 * 256 * expertBytes)
	embedTable := int64(248320 * (256*4 + 2*32*2))
	eq(t, mlx.DecodeBytesPerToken, mlx.BytesTotal-routedAll+40*8*expertBytes-embedTable+embedTable/248320)
	// The rest of a decode step's traffic: 30 DeltaNet layers' float32 recurrent state [32, 128, 128]
	// and conv state [8192, 3], read and written; K and V [2, 256] per position in 10 layers.
	eq(t, mlx.StateBytesPerToken, int64(30*2*4*(32*128*128+8192*3)))
	eq(t, mlx.KVBytesPerPosition, int64(10*2*4*2*256))
	eq(t, hf.StateBytesPerToken, mlx.StateBytesPerToken)
	// By part, from the shapes: a 4-bit [out, in] matrix stores out·(in/2 + 2·2·in/64) bytes, an
	// 8-bit one (the router and the shared expert's gate) out·(in + 2·2·in/64). lm_head [248320,
	// 2048]; per DeltaNet layer qkv [8192, 2048], z [4096, 2048], b and a [32, 2048], out [2048,
	// 4096]; per attention layer q [8192, 2048], k and v [512, 2048], o [2048, 4096]; per MoE the
	// router [256, 2048], the shared expert gate [1, 2048], the shared expert and 8 routed ones.
	q4 := func(out, in int64) int64 { return out * (in/2 + 4*in/64) }
	q8 := func(out, in int64) int64 { return out * (in + 4*in/64) }
	eq(t, mlx.DecodeParts, DecodeParts{
		DeltaNet:  30 * (q4(8192, 2048) + q4(4096, 2048) + 2*q4(32, 2048) + q4(2048, 4096)),
		Attention: 10 * (q4(8192, 2048) + 2*q4(512, 2048) + q4(2048, 4096)),
		MoE:       40 * (q8(256, 2048) + q8(1, 2048) + 9*expertBytes),
		LMHead:    q4(248320, 2048),
	})
	eq(t, q4(248320, 2048), int64(286_064_640))
	parts := mlx.DecodeParts.DeltaNet + mlx.DecodeParts.Attention + mlx.DecodeParts.MoE + mlx.DecodeParts.LMHead
	if rest := mlx.DecodeBytesPerToken - parts; rest < 0 || rest > 4<<20 {
		t.Fatalf("decode bytes outside the parts' matrices: %d, want the vectors and an embedding row (under 4 MiB)", rest)
	}
	t.Logf("mlx: params_total %d, params_active %d, bytes_total %d, decode_bytes_per_token %d",
		mlx.ParamsTotal, mlx.ParamsActive, mlx.BytesTotal, mlx.DecodeBytesPerToken)
	t.Logf("hf: bytes_total %d, decode_bytes_per_token %d", hf.BytesTotal, hf.DecodeBytesPerToken)
}
