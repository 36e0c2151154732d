package bench

import (
	"fmt"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// Memory is a computed budget of a session's memory at a context length, in bytes.
type Memory struct {
	Weights int64 // the mapped checkpoint tensors (all of them: a long prompt routes to every expert)
	KV      int64 // K and V of every position in every full-attention layer
	State   int64 // every Gated DeltaNet layer's recurrent state [Hv, Dk, Dv] and conv state [C, K−1], float32
	Buffers int64 // the prefill chunk's float32 activations, doubled for the Go heap's GC headroom
	// Snapshot is the server's prompt-cache snapshot beside the session: a copy of State (the
	// fast backend's snapshots share the session's KV rows, fast/kv_share.go, so no second KV).
	Snapshot int64
}

// Total is the sum of the parts.
func (m Memory) Total() int64 { return m.Weights + m.KV + m.State + m.Buffers + m.Snapshot }

func (m Memory) String() string {
	gb := func(b int64) float64 { return float64(b) / 1e9 }
	return fmt.Sprintf("weights %.2f GB + KV %.2f GB + state %.3f GB + buffers %.3f GB + snapshot %.3f GB = %.2f GB",
		gb(m.Weights), gb(m.KV), gb(m.State), gb(m.Buffers), gb(m.Snapshot), gb(m.Total()))
}

// gcHeadroom is the factor between the live buffers and the heap the Go runtime lets them occupy at
// the default GOGC=100 (garbage is collected when the heap reaches twice the live data).
const gcHeadroom = 2

// MemoryAt computes the budget of one session of a model of sizes d at ctx positions, and of the
// prompt-cache snapshot the server keeps beside it: weights
// bytes of mapped tensors, kvElem bytes per cached K/V element (2 for fp16, 4 for float32), the
// prefill running in chunks of chunk tokens. Buffers are the largest layer's float32 activations for one chunk, each
// counted once (the hidden state x, its normed copy and the layer output; attention's query and gate,
// keys, values and output; the DeltaNet's convolution input and output, z, b, a and output; the
// MoE's router logits, the gathered expert inputs and outputs, the experts' and shared expert's
// gate, up and activation, the normed rows as the integer GEMM's records) plus one row of logits,
// times gcHeadroom. Attention is tiled (no [chunk, ctx] score matrix), so no buffer grows with the
// context.
func MemoryAt(d checkpoint.Dims, weights int64, ctx, chunk, kvElem int) Memory {
	m := Memory{Weights: weights}
	m.KV = int64(ctx) * int64(d.Count(checkpoint.FullAttention)) * 2 * int64(d.KVWidth()) * int64(kvElem)
	m.State = 4 * int64(d.Count(checkpoint.LinearAttention)) * int64(d.DeltaNetState())
	m.Snapshot = m.State
	attn := 3*d.Hq*d.D + 2*d.KVWidth()
	deltanet := 2*d.ConvDim() + 2*d.ValueDim() + 2*d.Hv
	moe := d.E + 2*d.TopK*d.H + 3*d.TopK*d.I + 3*d.Is + (2*d.H+d.H/8+3)/4 // the last: the rows' int8 records
	perToken := 3*d.H + max(attn, deltanet, moe)
	m.Buffers = gcHeadroom * 4 * (int64(chunk)*int64(perToken) + int64(d.Vocab))
	return m
}
