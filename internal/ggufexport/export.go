// Package ggufexport writes a lily checkpoint as a GGUF file of llama.cpp's "qwen35moe"
// architecture (Qwen3.5/3.6 MoE), so that llama.cpp can run the same weights lily runs: every
// matrix but the router and the shared expert's gate as Q4_0, those and every vector as F32.
//
// Q4_0 (blocks of 32, one fp16 scale, symmetric) is what llama.cpp's CPU kernels run fastest and
// has the MLX checkpoint's bytes per weight (4.5 bits: MLX's groups of 64 carry a bf16 scale and
// bias): the two engines then stream the same number of bytes. The values are not MLX's: each
// row is dequantized (ref.Row) and requantized as llama.cpp's reference quantizer would, so the
// file is for speed comparisons, not for comparing outputs token by token.
//
// What llama.cpp expects beyond the names (from its qwen35moe model, loader and converter):
//   - the DeltaNet value heads in tiled order (value head j reads key head j mod Hk), where the
//     checkpoint groups them (heads g·r … g·r+r−1 read key head g, r = Hv/Hk): the value rows of
//     the qkv projection, the rows of z, a and b, A_log, dt_bias, the conv's value channels and
//     the out-projection's input columns are permuted (vHeadOrder);
//   - ssm_a = −exp(A_log); the norms as the multipliers lily's loader returns (the +1 of the HF
//     layout already applied, as llama.cpp's converter applies it);
//   - the conv as [channels, taps] with the last tap on the current token, as lily holds it;
//   - norms, ssm_a, ssm_dt.bias and the conv in F32 (its CPU kernels take no other type there).
//
// The vocabulary is written as llama.cpp's "none" tokenizer (a vocab_size and no strings): enough
// for llama-bench, which feeds token ids; tools that tokenize text need the real vocabulary.
package ggufexport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/gguf"
)

// Arch is llama.cpp's architecture name for the model.
const Arch = "qwen35moe"

// RowFunc writes logical row r of expert e of m, dequantized, into dst: [In] (ref.Row: the export
// takes the reference's dequantization from its caller, as only cmd picks an engine).
type RowFunc func(m *checkpoint.Matrix, e, r int, dst []float32) error

// Options say what Write writes.
type Options struct {
	Name string    // general.name
	Type gguf.Type // the matrices': gguf.Q4_0, or gguf.F32 (the checkpoint's values exactly, to check llama.cpp's outputs against lily's on a small model)
	Row  RowFunc
}

// Write writes w as a qwen35moe GGUF file to out. It stops with ctx's error between batches of
// rows once ctx is done.
func Write(ctx context.Context, out io.Writer, w *checkpoint.Weights, o Options) error {
	if o.Type != gguf.Q4_0 && o.Type != gguf.F32 {
		return fmt.Errorf("ggufexport: matrices as %v: want q4_0 or f32", o.Type)
	}
	if o.Row == nil {
		return errors.New("ggufexport: no row dequantizer")
	}
	kvs, err := metadata(w.Config, o.Name, o.Type)
	if err != nil {
		return err
	}
	ts, err := tensors(ctx, w, o)
	if err != nil {
		return err
	}
	return gguf.Write(out, kvs, ts)
}

// metadata returns the file's key/value pairs for config c.
func metadata(c *checkpoint.Config, name string, typ gguf.Type) ([]gguf.KV, error) {
	d := c.Dims()
	switch {
	case d.Dk != d.Dv:
		return nil, fmt.Errorf("ggufexport: llama.cpp's qwen35moe needs equal DeltaNet key and value head dims, have %d and %d", d.Dk, d.Dv)
	case d.Rot%2 != 0 || d.Rot <= 0:
		return nil, fmt.Errorf("ggufexport: rotary dims %d", d.Rot)
	}
	recurrent := make([]bool, len(d.LayerTypes))
	for i, k := range d.LayerTypes {
		recurrent[i] = k == checkpoint.LinearAttention
	}
	// IMROPE's sections split the rotated pairs; text positions are the same in every section,
	// so any split rotates text as plain RoPE. Qwen3.6's is [11, 11, 10, 0] of 32 pairs.
	pairs := d.Rot / 2
	sections := []int32{int32(pairs/3 + min(1, pairs%3)), int32(pairs/3 + pairs%3/2), int32(pairs / 3), 0}
	u := func(x int) uint32 { return uint32(x) }
	a := Arch + "."
	return []gguf.KV{
		{Key: "general.architecture", Value: Arch},
		{Key: "general.name", Value: name},
		{Key: "general.file_type", Value: fileType(typ)},
		{Key: a + "vocab_size", Value: u(d.Vocab)},
		{Key: a + "context_length", Value: u(c.MaxPositionEmbeddings)},
		{Key: a + "embedding_length", Value: u(d.H)},
		{Key: a + "block_count", Value: u(len(d.LayerTypes))},
		{Key: a + "expert_count", Value: u(d.E)},
		{Key: a + "expert_used_count", Value: u(d.TopK)},
		{Key: a + "expert_feed_forward_length", Value: u(d.I)},
		{Key: a + "expert_shared_feed_forward_length", Value: u(d.Is)},
		{Key: a + "attention.head_count", Value: u(d.Hq)},
		{Key: a + "attention.head_count_kv", Value: u(d.Hkv)},
		{Key: a + "attention.key_length", Value: u(d.D)},
		{Key: a + "attention.value_length", Value: u(d.D)},
		{Key: a + "attention.layer_norm_rms_epsilon", Value: float32(c.RMSNormEps)},
		{Key: a + "attention.recurrent_layers", Value: recurrent},
		{Key: a + "rope.freq_base", Value: float32(c.RopeTheta)},
		{Key: a + "rope.dimension_count", Value: u(d.Rot)},
		{Key: a + "rope.dimension_sections", Value: sections},
		{Key: a + "ssm.conv_kernel", Value: u(d.K)},
		{Key: a + "ssm.inner_size", Value: u(d.Hv * d.Dv)},
		{Key: a + "ssm.state_size", Value: u(d.Dk)},
		{Key: a + "ssm.group_count", Value: u(d.Hk)},
		{Key: a + "ssm.time_step_rank", Value: u(d.Hv)},
		{Key: "tokenizer.ggml.model", Value: "none"},
	}, nil
}

// fileType is llama.cpp's llama_ftype of a file whose matrices are typ: "all F32" (0) or
// "mostly Q4_0" (2).
func fileType(typ gguf.Type) uint32 {
	if typ == gguf.Q4_0 {
		return 2
	}
	return 0
}

// vHeadOrder returns, for each of hv value heads in llama.cpp's tiled order, the checkpoint's
// (grouped) head stored there: position j·hk + g holds head g·(hv/hk) + j.
func vHeadOrder(hk, hv int) []int {
	r := hv / hk
	p := make([]int, hv)
	for pos := range p {
		g, j := pos%hk, pos/hk
		p[pos] = g*r + j
	}
	return p
}

// tensors returns every tensor of w, in llama.cpp's names, with the writers of their data.
func tensors(ctx context.Context, w *checkpoint.Weights, o Options) ([]gguf.Tensor, error) {
	// weight is a matrix in o.Type; float one in F32 (the router, the shared expert's gate).
	weight := func(name string, m *checkpoint.Matrix, rows, cols []int) gguf.Tensor {
		return matrix(ctx, name, m, rows, cols, o.Type, o.Row)
	}
	float := func(name string, m *checkpoint.Matrix) gguf.Tensor { return matrixF32(ctx, name, m, o.Row) }
	d := w.Config.Dims()
	vh := vHeadOrder(d.Hk, d.Hv)
	kd := d.Hk * d.Dk // the qkv projection's q and k blocks, each
	ts := []gguf.Tensor{
		weight("token_embd.weight", &w.Embed, nil, nil),
		vec("output_norm.weight", w.FinalNorm),
	}
	if !w.Config.TieWordEmbeddings {
		ts = append(ts, weight("output.weight", &w.LMHead, nil, nil))
	}
	for i := range w.Layers {
		l := &w.Layers[i]
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts, vec(p+"attn_norm.weight", l.InputNorm), vec(p+"post_attention_norm.weight", l.PostNorm))
		switch {
		case l.DeltaNet != nil:
			g := l.DeltaNet
			qkvRows := append(identity(2*kd), heads(vh, d.Dv, 2*kd)...)
			ssmA := make([]float32, d.Hv)
			for h, src := range vh {
				ssmA[h] = float32(-math.Exp(float64(g.ALog[src])))
			}
			ts = append(ts,
				weight(p+"attn_qkv.weight", &g.QKV, qkvRows, nil),
				weight(p+"attn_gate.weight", &g.Z, heads(vh, d.Dv, 0), nil),
				weight(p+"ssm_beta.weight", &g.B, vh, nil),
				weight(p+"ssm_alpha.weight", &g.A, vh, nil),
				vec(p+"ssm_dt.bias", permute(g.DtBias, vh)),
				vec(p+"ssm_a", ssmA),
				conv(p+"ssm_conv1d.weight", g.Conv, qkvRows, d.K),
				vec(p+"ssm_norm.weight", g.Norm),
				weight(p+"ssm_out.weight", &g.Out, nil, heads(vh, d.Dv, 0)))
		case l.Attn != nil:
			at := l.Attn
			ts = append(ts,
				weight(p+"attn_q.weight", &at.Q, nil, nil),
				weight(p+"attn_k.weight", &at.K, nil, nil),
				weight(p+"attn_v.weight", &at.V, nil, nil),
				weight(p+"attn_output.weight", &at.O, nil, nil),
				vec(p+"attn_q_norm.weight", at.QNorm),
				vec(p+"attn_k_norm.weight", at.KNorm))
		default:
			return nil, fmt.Errorf("ggufexport: layer %d has no mixer", i)
		}
		m := &l.MoE
		ts = append(ts,
			float(p+"ffn_gate_inp.weight", &m.Router),
			weight(p+"ffn_gate_exps.weight", &m.Gate, nil, nil),
			weight(p+"ffn_up_exps.weight", &m.Up, nil, nil),
			weight(p+"ffn_down_exps.weight", &m.Down, nil, nil),
			float(p+"ffn_gate_inp_shexp.weight", &m.SharedEG),
			weight(p+"ffn_gate_shexp.weight", &m.SharedGate, nil, nil),
			weight(p+"ffn_up_shexp.weight", &m.SharedUp, nil, nil),
			weight(p+"ffn_down_shexp.weight", &m.SharedDown, nil, nil))
	}
	return ts, nil
}

// identity returns 0 … n−1.
func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// heads expands a head order to the indices of its rows (or columns), size each, offset by base.
func heads(order []int, size, base int) []int {
	p := make([]int, 0, len(order)*size)
	for _, h := range order {
		for i := 0; i < size; i++ {
			p = append(p, base+h*size+i)
		}
	}
	return p
}

// permute returns x[order[0]], x[order[1]], ….
func permute(x []float32, order []int) []float32 {
	y := make([]float32, len(order))
	for i, j := range order {
		y[i] = x[j]
	}
	return y
}
