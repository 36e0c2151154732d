package checkpoint

import (
	"sort"

	"github.com/lily-engine/lily/internal/tensortable"
)

// Stats summarises a checkpoint for `lily inspect` and the bandwidth roofline.
//
// ParamsTotal counts every text-model weight once, a quantized matrix by its logical size
// (scales and biases are not parameters), so the HF and MLX layouts of one model agree.
// ParamsActive is what one token uses: everything except the embedding table (a lookup, not a
// matmul) and the routed experts a token does not select (top-k of E per layer).
// BytesTotal is the stored size of the text-model tensors, scales and biases included.
// DecodeBytesPerToken is what one decode step reads: all of BytesTotal except the embedding
// table (one row of it instead; all of it when tied to lm_head) and the unselected experts.
// StateBytesPerToken and KVBytesPerPosition are the rest of a decode step's memory traffic, for
// float32 state as both CPU backends keep it: every Gated DeltaNet layer's recurrent state
// [Hv, Dk, Dv] and conv state [C, K−1] read and written once, and the K and V rows of each cached
// position read once per attention layer (a step at context n reads n of them).
type Stats struct {
	Layout              string      `json:"layout"`
	Quantization        *QuantStats `json:"quantization"` // null when unquantized
	Tensors             int         `json:"tensors"`      // text-model tensors used
	SkippedTensors      int         `json:"skipped_tensors"`
	Files               int         `json:"files"`
	ParamsTotal         int64       `json:"params_total"`
	ParamsActive        int64       `json:"params_active"`
	BytesTotal          int64       `json:"bytes_total"`
	DecodeBytesPerToken int64       `json:"decode_bytes_per_token"`
	StateBytesPerToken  int64       `json:"state_bytes_per_token"`
	KVBytesPerPosition  int64       `json:"kv_bytes_per_position"`
	DecodeParts         DecodeParts `json:"decode_parts"`
	Layers              int         `json:"layers"`
	LinearAttention     int         `json:"linear_attention_layers"`
	FullAttention       int         `json:"full_attention_layers"`
	Experts             int         `json:"experts"`
	ExpertsPerToken     int         `json:"experts_per_token"`
	HiddenSize          int         `json:"hidden_size"`
	VocabSize           int         `json:"vocab_size"`
}

// DecodeParts splits the matrices of DecodeBytesPerToken by the part of a decode step that reads
// them; the rest of DecodeBytesPerToken is vectors (norms, conv taps, gates' constants) and the
// embedding row.
type DecodeParts struct {
	DeltaNet  int64 `json:"deltanet"`  // every Gated DeltaNet mixer's projections
	Attention int64 `json:"attention"` // every attention mixer's projections
	MoE       int64 `json:"moe"`       // every layer's router, shared expert and top-k routed experts
	LMHead    int64 `json:"lm_head"`
}

// QuantStats is the config's quantization block in brief.
type QuantStats struct {
	Bits      int    `json:"bits"`
	GroupSize int    `json:"group_size"`
	Mode      string `json:"mode"`
	Overrides int    `json:"overrides"`
	// OverrideBits counts overridden modules by bit width (e.g. {"8": 80}); 0 means unquantized.
	OverrideBits map[int]int `json:"override_bits,omitempty"`
}

// computeStats derives Stats from built weights and the loader's record of used tensors.
func computeStats(w *Weights, l *loader) Stats {
	c := w.Config
	s := Stats{Layout: w.Layout.String(), Tensors: len(l.used), Layers: c.NumLayers,
		LinearAttention: c.NumLayersOf(LinearAttention), FullAttention: c.NumLayersOf(FullAttention),
		Experts: c.NumExperts, ExpertsPerToken: c.NumExpertsPerTok, HiddenSize: c.HiddenSize, VocabSize: c.VocabSize}
	if q := c.Quant; q != nil {
		qs := &QuantStats{Bits: q.Bits, GroupSize: q.GroupSize, Mode: q.Mode, Overrides: len(q.Overrides)}
		for _, p := range q.Overrides {
			if qs.OverrideBits == nil {
				qs.OverrideBits = map[int]int{}
			}
			qs.OverrideBits[p.Bits]++
		}
		s.Quantization = qs
	}
	for name := range l.ts {
		if tensortable.IsOutsideText(name) {
			s.SkippedTensors++
		}
	}

	var routedBytes, embedBytes int64
	names := make([]string, 0, len(l.used))
	for n := range l.used {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b := nbytes(l.ts[n])
		s.BytesTotal += b
		switch l.used[n] {
		case catRouted:
			routedBytes += b
		case catEmbed:
			embedBytes += b
		}
	}

	var routedParams int64
	tied := w.LMHead.W.Name == w.Embed.W.Name
	s.ParamsTotal = w.Embed.logicalParams()
	if !tied {
		s.ParamsTotal += w.LMHead.logicalParams()
	}
	s.ParamsTotal += int64(len(w.FinalNorm))
	for i := range w.Layers {
		ly := &w.Layers[i]
		s.ParamsTotal += int64(len(ly.InputNorm) + len(ly.PostNorm))
		if g := ly.DeltaNet; g != nil {
			s.ParamsTotal += paramsOf(&g.QKV, &g.Z, &g.B, &g.A, &g.Out) +
				int64(len(g.Conv)+len(g.ALog)+len(g.DtBias)+len(g.Norm))
		}
		if a := ly.Attn; a != nil {
			s.ParamsTotal += paramsOf(&a.Q, &a.K, &a.V, &a.O) + int64(len(a.QNorm)+len(a.KNorm))
		}
		m := &ly.MoE
		s.ParamsTotal += paramsOf(&m.Router, &m.SharedGate, &m.SharedUp, &m.SharedDown, &m.SharedEG)
		routedParams += paramsOf(&m.Gate, &m.Up, &m.Down)
	}
	s.ParamsTotal += routedParams
	s.DecodeParts = decodeParts(w)

	E, k := int64(c.NumExperts), int64(c.NumExpertsPerTok)
	s.ParamsActive = s.ParamsTotal - routedParams + routedParams/E*k
	if !tied {
		s.ParamsActive -= w.Embed.logicalParams()
	}
	s.DecodeBytesPerToken = s.BytesTotal - routedBytes + routedBytes/E*k
	d := c.Dims()
	s.StateBytesPerToken = 2 * 4 * int64(s.LinearAttention) * int64(d.DeltaNetState())
	s.KVBytesPerPosition = 2 * 4 * int64(s.FullAttention) * int64(d.KVWidth())
	if !tied {
		s.DecodeBytesPerToken -= embedBytes - embedBytes/int64(c.VocabSize)
	} else {
		s.DecodeBytesPerToken += embedBytes / int64(c.VocabSize)
	}
	return s
}

// decodeParts sums the matrices one decode step reads by part: each layer's mixer, its MoE with
// k of the E routed experts, and lm_head.
func decodeParts(w *Weights) DecodeParts {
	var p DecodeParts
	c := w.Config
	for i := range w.Layers {
		ly := &w.Layers[i]
		if g := ly.DeltaNet; g != nil {
			p.DeltaNet += bytesOf(&g.QKV, &g.Z, &g.B, &g.A, &g.Out)
		}
		if a := ly.Attn; a != nil {
			p.Attention += bytesOf(&a.Q, &a.K, &a.V, &a.O)
		}
		m := &ly.MoE
		p.MoE += bytesOf(&m.Router, &m.SharedGate, &m.SharedUp, &m.SharedDown, &m.SharedEG) +
			bytesOf(&m.Gate, &m.Up, &m.Down)/int64(c.NumExperts)*int64(c.NumExpertsPerTok)
	}
	p.LMHead = bytesOf(&w.LMHead)
	return p
}

// bytesOf sums the stored bytes of matrices (Matrix.storedBytes).
func bytesOf(ms ...*Matrix) int64 {
	var n int64
	for _, m := range ms {
		n += m.storedBytes()
	}
	return n
}

// paramsOf sums the logical parameter counts of matrices.
func paramsOf(ms ...*Matrix) int64 {
	var n int64
	for _, m := range ms {
		n += m.logicalParams()
	}
	return n
}
