// Package fast is lily's optimized engine. Prefill and decode are different workloads with their own
// plans: decode streams every active weight once per token (bandwidth-bound: fused dequant mat-vecs,
// the selected experts gathered in one dispatch, the DeltaNet step fused per head with its state
// resident); prefill processes the prompt in chunks (row-dequantized GEMMs reused across tokens,
// tokens grouped by expert, the chunked delta rule, causal attention tiled over query rows).
// The heavy loops run on a fixed worker pool; nothing is allocated per token.
//
// The files follow the model's layers, as ref's do, each holding its decode and prefill:
// deltanet.go (with the chunked delta rule in deltanet_chunk.go), attention.go, moe.go, and
// linear.go (the gathered mat-vec and mat-mat dispatches). decode.go and prefill.go drive the two
// phases over the layers; session.go holds a sequence's state, kvcache.go its attention cache,
// weights.go the matrix views, ops.go the shared vector loops, trace.go the observed twins.
package fast

import (
	"errors"
	"fmt"
	"math"

	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
)

// Model is the fast backend: the prepared weights plus the plans' fixed sizes, on the fast/cpu
// kernels and their worker pool, which the Model owns (Close stops it). It is immutable after Open
// and may be shared by sessions that are used one at a time (they share the pool).
type Model struct {
	cfg      *checkpoint.Config
	run      *cpu.Pool // the kernels' pool; it also runs the plans' other parallel loops
	k        *cpu.Kernels
	embed    *mat
	lmHead   *mat
	final    []float32
	layers   []layer
	inv      []float64 // RoPE inverse frequencies
	dims     checkpoint.Dims
	maxCtx   int
	ops      vecOps // dot and axpy of the plans' inner loops
	int16    bool   // decode's 4-bit mat-vecs read int16 activations (Options.Int16Activations)
	kv32     bool   // the KV cache in float32 (Options.KVCacheF32), not fp16
	spare    prefillSpare
	states   stateSpare
	sessions sessionSpare
}

type layer struct {
	kind              checkpoint.LayerKind
	inNorm, postNorm  []float32
	qkv, z, b, a, out *mat      // DeltaNet
	convT             []float32 // the conv kernel [K, C], transposed from the checkpoint's [C, K]
	aLog, dtBias, gn  []float32
	q, k, v, o        *mat // attention
	qn, kn            []float32
	router            *mat
	gate, up, down    []*mat // per expert
	sg, su, sd, seg   *mat
}

// Options tune the fast plans.
type Options struct {
	// MaxContext bounds a session's length (0: the config's max_position_embeddings).
	MaxContext int
	// Int16Activations makes all of decode's 4-bit mat-vecs read their input quantized to int16 per
	// group of 64 (cpu.Kernels.QMatVecQ16), not only the lm_head's: faster decode on AVX-512
	// without VNNI (with VNNI, slower than the default kernel), but the rounding reaches the
	// session's state. Off by default: see Session.vecsQ16.
	Int16Activations bool
	// Threads is the size of the worker pool (0: one worker per core).
	Threads int
	// Portable runs the portable Go kernels (cpu.NewPortable) instead of the SIMD ones: the same
	// plans, a check of the SIMD kernels against their portable twins.
	Portable bool
	// KVCacheF32 keeps the KV cache in float32 instead of fp16: twice the memory and the bytes
	// attention reads, exact to ref's rounding of the keys and values (conformance checks the
	// transformers goldens with it; the default fp16 cache has its own budget).
	KVCacheF32 bool
}

// Open checks w (checkpoint.Weights.Validate) and prepares it for the fast plans on the fast/cpu
// kernels, with a worker pool of its own that Close stops. The weights must stay valid (mapped)
// until Close.
func Open(w *checkpoint.Weights, o Options) (engine.Backend, error) {
	if w == nil || w.Config == nil {
		return nil, errors.New("fast: nil weights or config")
	}
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("fast: %w", err)
	}
	p := cpu.NewPool(o.Threads)
	k := cpu.New(p)
	if o.Portable {
		k = cpu.NewPortable(p)
	}
	m, err := newModel(w, k, o)
	if err != nil {
		p.Close()
		return nil, err
	}
	return m, nil
}

// Close stops the model's worker pool. Sessions must be closed first.
func (m *Model) Close() error {
	m.run.Close()
	return nil
}

func newModel(w *checkpoint.Weights, k *cpu.Kernels, o Options) (*Model, error) {
	c := w.Config
	maxCtx := o.MaxContext
	if maxCtx <= 0 {
		maxCtx = c.MaxPositionEmbeddings
	}
	m := &Model{cfg: c, run: k.Pool(), k: k, ops: vecOps{k}, int16: o.Int16Activations, kv32: o.KVCacheF32, final: w.FinalNorm, maxCtx: maxCtx,
		inv: ropeInvFreq(c.RotaryDim(), c.RopeTheta), dims: c.Dims()}
	if m.dims.Dv > 256 || c.HeadDim > 512 {
		return nil, fmt.Errorf("fast: head dims %d/%d exceed the kernels' limits", m.dims.Dv, c.HeadDim)
	}
	var err error
	one := func(x *checkpoint.Matrix) *mat {
		if err != nil {
			return nil
		}
		var v *mat
		v, err = view(x, 0)
		return v
	}
	all := func(x *checkpoint.Matrix) []*mat {
		if err != nil {
			return nil
		}
		var v []*mat
		v, err = views(x)
		return v
	}
	m.embed, m.lmHead = one(&w.Embed), one(&w.LMHead)
	for i := range w.Layers {
		wl := &w.Layers[i]
		l := layer{kind: wl.Kind, inNorm: wl.InputNorm, postNorm: wl.PostNorm}
		if g := wl.DeltaNet; g != nil {
			l.qkv, l.z, l.b, l.a, l.out = one(&g.QKV), one(&g.Z), one(&g.B), one(&g.A), one(&g.Out)
			l.aLog, l.dtBias, l.gn = g.ALog, g.DtBias, g.Norm
			l.convT = convWeightsT(g.Conv, m.dims.ConvDim(), m.dims.K)
		}
		if a := wl.Attn; a != nil {
			l.q, l.k, l.v, l.o = one(&a.Q), one(&a.K), one(&a.V), one(&a.O)
			l.qn, l.kn = a.QNorm, a.KNorm
		}
		e := &wl.MoE
		l.router, l.gate, l.up, l.down = one(&e.Router), all(&e.Gate), all(&e.Up), all(&e.Down)
		l.sg, l.su, l.sd, l.seg = one(&e.SharedGate), one(&e.SharedUp), one(&e.SharedDown), one(&e.SharedEG)
		m.layers = append(m.layers, l)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// VocabSize is the logits length.
func (m *Model) VocabSize() int { return m.cfg.VocabSize }

// MaxContext is the longest sequence a session may hold.
func (m *Model) MaxContext() int { return m.maxCtx }

// Name is "fast".
func (m *Model) Name() string { return "fast" }

func (m *Model) eps() float64 { return m.cfg.RMSNormEps }

// embedRow writes the embedding of token id into h: [H].
func (m *Model) embedRow(id int32, h []float32) error {
	if id < 0 || int(id) >= m.embed.out {
		return fmt.Errorf("fast: token id %d outside the vocabulary [0, %d)", id, m.embed.out)
	}
	m.embed.dequantRow(int(id), h)
	return nil
}

// qkScale is Dk^-1/2, applied to q after its L2 norm.
func (m *Model) qkScale() float32 { return float32(1 / math.Sqrt(float64(m.dims.Dk))) }

// KVElementBytes is the size of one cached K or V element: 2 (fp16), or 4 with Options.KVCacheF32.
func (m *Model) KVElementBytes() int {
	if m.kv32 {
		return 4
	}
	return 2
}
