package metal

import (
	"errors"
	"fmt"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/rope"
	"github.com/lily-engine/lily/metal/device"
)

// kernelGroup is the quantization group the kernels are compiled for (LILY_GROUP in
// kernels/00_common.metal).
const kernelGroup = 64

// Model is the Metal backend: the fast engine's plans (design.md §3) as dispatch sequences on a
// Device. Decode is one command buffer per token; prefill runs in chunks of up to maxChunk tokens
// (as many as the device's working set allows: sizeChunk), one command buffer per chunk, with
// tokens grouped by expert on the GPU. The weights are wrapped once (in place, where the device
// can) and shared by every session.
//
// A Model is safe for concurrent use through distinct Sessions (the device serializes their
// command buffers); one Session is used by one goroutine at a time.
type Model struct {
	dev    device.Device
	cfg    *checkpoint.Config
	maxCtx int
	chunk  int // prefill tokens per command buffer
	topK   int // how many ids logits_topk_merge returns per step

	w      deviceWeights
	wbufs  []device.Buffer // wrapped weight memory and the vector arena, freed by Close
	zeroes device.Buffer   // E+1 zero words: the source of the moe_count reset copy
	sizes  sizes
	rope   *rope.Table // RoPE inverse frequencies; setInputs fills each position's tables from it
	ownDev bool        // Close closes dev (Open opened it)
	loaded WeightBytes // how upload bound the weights
	foot   Footprint   // what the model needs on the device, checked before upload
}

// sizes are the model dimensions the plans use: the config's Dims, and its sizes under the short
// names the plans were written with (newSizes derives them from dims, nowhere else), with the
// RMSNorm epsilon and the device's lane counts.
type sizes struct {
	dims                               checkpoint.Dims
	h, v, layers, e, k, inter, shared  int
	hq, hkv, d, rot                    int
	hk, hv, dk, dv, conv, c            int
	eps                                float32
	routerLanes, topkLanes, mergeLanes int // threadgroup sizes router_softmax_topk, logits_topk_part and _merge may use on the device
}

// newSizes derives the plans' sizes from c.Dims.
func newSizes(c *checkpoint.Config) sizes {
	d := c.Dims()
	return sizes{dims: d, h: d.H, v: d.Vocab, layers: d.NumLayers(), e: d.E, k: d.TopK, inter: d.I, shared: d.Is,
		hq: d.Hq, hkv: d.Hkv, d: d.D, rot: d.Rot, hk: d.Hk, hv: d.Hv, dk: d.Dk, dv: d.Dv, conv: d.K, c: d.ConvDim(),
		eps: float32(c.RMSNormEps)}
}

// newModel prepares w for the Metal plans on dev (which the Model does not own; Open sets ownDev
// when it opened dev). Only the MLX (quantized) layout runs on Metal: every matrix must be 4- or
// 8-bit with group size 64. maxCtx bounds a session's length (0 means the config's
// max_position_embeddings); each session allocates its KV caches to it. The weights must stay valid (mapped)
// until Close.
func newModel(w *checkpoint.Weights, dev device.Device, maxCtx int) (*Model, error) {
	if w == nil || w.Config == nil {
		return nil, errors.New("metal: nil weights or config")
	}
	if dev == nil {
		return nil, errors.New("metal: nil device")
	}
	if err := w.Validate(); err != nil { // shapes and stored sizes of every tensor
		return nil, fmt.Errorf("metal: %w", err)
	}
	c := w.Config
	if maxCtx <= 0 {
		maxCtx = c.MaxPositionEmbeddings
	}
	e := &Model{dev: dev, cfg: c, maxCtx: maxCtx, topK: HeadTopK}
	e.rope = rope.New(c.RotaryDim(), c.RopeTheta)
	e.sizes = newSizes(c)
	if err := checkLimits(w, &e.sizes); err != nil {
		return nil, err
	}
	if err := e.sizes.pipelineLanes(dev); err != nil {
		return nil, err
	}
	foot, err := e.sizeChunk(func() Footprint { return e.footprint(w) }, dev.Limits())
	if err != nil {
		return nil, err
	}
	e.foot = foot
	if err := e.upload(w); err != nil {
		e.Close()
		return nil, err
	}
	z, err := dev.Alloc(4*(e.sizes.e+1), device.Private)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("metal: %w", err)
	}
	e.zeroes = z
	return e, nil
}

// ErrDenseLayout is returned for a checkpoint the Metal kernels cannot run: the dense HF layout
// (or any unquantized matrix).
var ErrDenseLayout = errors.New("the Metal engine runs the MLX (4/8-bit quantized) layout only")

// checkLimits rejects what the kernels cannot run, naming the limit.
func checkLimits(w *checkpoint.Weights, s *sizes) error {
	var bad error
	each(w, func(m *checkpoint.Matrix) {
		switch {
		case bad != nil:
		case m.Bits == 0:
			bad = fmt.Errorf("metal: matrix %s is dense (%s layout): %w; convert the checkpoint with mlx-lm or use the cpu device",
				m.Name, w.Layout, ErrDenseLayout)
		case m.GroupSize != kernelGroup:
			bad = fmt.Errorf("metal: matrix %s has group size %d; the kernels are built for %d", m.Name, m.GroupSize, kernelGroup)
		case m.RowOffset != 0 || m.StoredRows != m.Out:
			bad = fmt.Errorf("metal: matrix %s is a row window of a fused tensor (HF layout): %w", m.Name, ErrDenseLayout)
		}
	})
	if bad != nil {
		return bad
	}
	lim := []struct {
		ok   bool
		what string
	}{
		{s.d <= 256 && s.d%8 == 0, "head_dim <= 256 (attention lanes hold 8 values each), a multiple of 8 (8×8 matrix tiles)"},
		{s.dk <= 128 && s.dv <= 256, "linear key head dim <= 128 and value head dim <= 256 (deltanet_scan's registers)"},
		{s.hk > 0 && s.hv%s.hk == 0, "value heads a multiple of key heads"},
		{s.hkv > 0 && s.hq%s.hkv == 0 && s.hq/s.hkv <= 32, "query heads a multiple of kv heads, at most 32 per kv head (one SIMD group each)"},
		{s.rot%2 == 0 && s.rot <= s.d, "an even rotary dim within the head"},
		{s.e <= 1024 && s.k <= 32 && s.k <= s.e, "num_experts <= 1024 and num_experts_per_tok <= min(32, num_experts)"},
		{s.conv >= 1 && s.conv <= 8, "a conv kernel of 1 to 8 taps"},
	}
	for _, l := range lim {
		if !l.ok {
			return fmt.Errorf("metal: the kernels need %s", l.what)
		}
	}
	for i := range w.Layers {
		m := &w.Layers[i].MoE
		b := m.Gate.Bits
		if m.Up.Bits != b || m.Down.Bits != b || m.SharedGate.Bits != b || m.SharedUp.Bits != b || m.SharedDown.Bits != b {
			return fmt.Errorf("metal: layer %d: routed and shared experts must share one bit width (the MoE kernels take one)", i)
		}
		if m.Router.Bits != m.SharedEG.Bits {
			return fmt.Errorf("metal: layer %d: router (%d-bit) and shared expert gate (%d-bit) must share one bit width",
				i, m.Router.Bits, m.SharedEG.Bits)
		}
	}
	return nil
}

// each calls fn on every matrix of w.
func each(w *checkpoint.Weights, fn func(*checkpoint.Matrix)) {
	fn(&w.Embed)
	fn(&w.LMHead)
	for i := range w.Layers {
		l := &w.Layers[i]
		if g := l.DeltaNet; g != nil {
			for _, m := range []*checkpoint.Matrix{&g.QKV, &g.Z, &g.B, &g.A, &g.Out} {
				fn(m)
			}
		}
		if a := l.Attn; a != nil {
			for _, m := range []*checkpoint.Matrix{&a.Q, &a.K, &a.V, &a.O} {
				fn(m)
			}
		}
		m := &l.MoE
		for _, x := range []*checkpoint.Matrix{&m.Router, &m.Gate, &m.Up, &m.Down, &m.SharedGate, &m.SharedUp, &m.SharedDown, &m.SharedEG} {
			fn(x)
		}
	}
}

// Name is the device's name: "metal" or "metal-emu".
func (e *Model) Name() string { return e.dev.Name() }

// VocabSize is the logits length.
func (e *Model) VocabSize() int { return e.sizes.v }

// MaxContext is the longest sequence a session may hold.
func (e *Model) MaxContext() int { return e.maxCtx }

// NewSession returns an empty sequence with its device buffers.
func (e *Model) NewSession() (engine.Session, error) { return e.newSession() }

// Close frees the weight buffers, and closes the device when Open opened it. Sessions must be
// closed first.
func (e *Model) Close() error {
	for _, b := range e.wbufs {
		e.dev.Free(b)
	}
	e.wbufs = nil
	if e.zeroes != nil {
		e.dev.Free(e.zeroes)
		e.zeroes = nil
	}
	if e.ownDev {
		e.ownDev = false
		return e.dev.Close()
	}
	return nil
}

var (
	_ engine.Backend = (*Model)(nil)
	_ engine.Session = (*Session)(nil)
	_ device.Device  = (*device.EmuDevice)(nil)
)

// mats lists the device matrices in the order each visits the checkpoint's.
func (e *Model) mats() []*qmat {
	qs := []*qmat{e.w.embed, e.w.lmHead}
	for _, l := range e.w.layers {
		if l.kind == checkpoint.LinearAttention {
			qs = append(qs, l.qkv, l.z, l.b, l.a, l.out)
		} else {
			qs = append(qs, l.q, l.k, l.v, l.o)
		}
		qs = append(qs, l.router, l.gate, l.up, l.down, l.sg, l.su, l.sd, l.seg)
	}
	return qs
}
