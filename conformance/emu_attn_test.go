package conformance

import (
	"github.com/lily-engine/lily/metal/budget"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/ref"
)

const attnTol = budget.Attn // the budget and why: metal/budget

const attnLayerTol = budget.AttnLayer // the budget and why: metal/budget

// attnShape is the geometry of one attention test.
type attnShape struct{ hq, hkv, d, rot int }

// attnDims packs AttnDims.
func attnDims(s attnShape, pos0, T, n, split int) []byte {
	return dims(s.hq, s.hkv, s.d, s.rot, pos0, T, n, split, float32(1e-6), float32(1/math.Sqrt(float64(s.d))))
}

// ropeTable is cs: [T, rot], row t = [cos | sin] of position pos0+t.
func ropeTable(pos0, T, rot int, theta float64) []float32 {
	var cs []float32
	for t := 0; t < T; t++ {
		c, s := ref.RopeCosSin(pos0+t, rot, theta)
		cs = append(append(cs, c...), s...)
	}
	return cs
}

// normRope is ref's RMSNorm then RoPE of one head.
func normRope(x, w []float32, pos, rot int) []float32 {
	out := make([]float32, len(x))
	ref.RMSNorm(out, x, w, 1e-6)
	c, s := ref.RopeCosSin(pos, rot, 1e7)
	ref.ApplyRoPE(out, c, s)
	return out
}

func testAttnPrep(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(21, 1))
	for _, c := range []struct {
		s       attnShape
		pos0, T int
	}{{attnShape{4, 2, 64, 16}, 5, 3}, {attnShape{2, 1, 256, 64}, 0, 1}, {attnShape{16, 2, 256, 64}, 7, 2}} {
		s, T, rows := c.s, c.T, c.pos0+c.T+2
		q2, kk, v := randRows(rng, T, 2*s.hq*s.d, 1), randRows(rng, T, s.hkv*s.d, 1), randRows(rng, T, s.hkv*s.d, 1)
		qn, kn := normWeight(rng, s.d), normWeight(rng, s.d)
		kc, vc := randVec(rng, rows*s.hkv*s.d, 1), randVec(rng, rows*s.hkv*s.d, 1)
		bufs := map[int][]byte{0: flat(q2), 1: flat(kk), 2: flat(v), 3: f32(qn), 4: f32(kn),
			5: f32(ropeTable(c.pos0, T, s.rot, 1e7)), 6: zeros(T * s.hq * s.d), 7: zeros(T * s.hq * s.d),
			8: f16(kc), 9: f16(vc), 10: attnDims(s, c.pos0, T, c.pos0+T, 1)}
		k.run("attn_prep", [3]int{s.hq + s.hkv, T, 1}, [3]int{32, 1, 1}, bufs)
		var wantQ, wantG []float32
		for tok := 0; tok < T; tok++ {
			for h := 0; h < s.hq; h++ {
				head := q2[tok][2*h*s.d : (2*h+2)*s.d]
				wantQ = append(wantQ, normRope(head[:s.d], qn, c.pos0+tok, s.rot)...)
				wantG = append(wantG, head[s.d:]...)
			}
			row := (c.pos0 + tok) * s.hkv * s.d
			for h := 0; h < s.hkv; h++ {
				copy(kc[row+h*s.d:], normRope(kk[tok][h*s.d:(h+1)*s.d], kn, c.pos0+tok, s.rot))
			}
			copy(vc[row:], v[tok])
		}
		near(t, "attn_prep q", unf32(bufs[6]), wantQ, attnTol)
		near(t, "attn_prep gate", unf32(bufs[7]), wantG, 0)
		near(t, "attn_prep k cache", unf16(bufs[8]), roundF16(kc), attnTol+kvF16Ulp)
		near(t, "attn_prep v cache", unf16(bufs[9]), roundF16(vc), 0)
	}
}

// refAttend is Σ softmax(q·K)·V times sigmoid(gate) for every query head of one token over the
// first n cache rows. q, gate: [Hq·D]; kc, vc: [≥n, Hkv·D] → [Hq·D].
func refAttend(s attnShape, q, gate, kc, vc []float32, n int) []float32 {
	var out []float32
	for h := 0; h < s.hq; h++ {
		g := h / (s.hq / s.hkv)
		keys, vals := make([][]float32, n), make([][]float32, n)
		for j := range keys {
			at := (j*s.hkv + g) * s.d
			keys[j], vals[j] = kc[at:at+s.d], vc[at:at+s.d]
		}
		o := ref.AttendHead(q[h*s.d:(h+1)*s.d], keys, vals, float32(1/math.Sqrt(float64(s.d))))
		for i := range o {
			o[i] *= ref.Sigmoid(gate[h*s.d+i])
		}
		out = append(out, o...)
	}
	return out
}

// decodeAttend runs attn_decode_split and attn_decode_combine over the first n cache rows.
func decodeAttend(k kern, s attnShape, q, gate, kc, vc []byte, n, split int) []float32 {
	splits := ceil(n, split)
	d := attnDims(s, n-1, 1, n, split)
	part, out := zeros(s.hq*splits*(s.d+2)), zeros(s.hq*s.d)
	k.run("attn_decode_split", [3]int{s.hkv, splits, 1}, [3]int{32 * (s.hq / s.hkv), 1, 1}, map[int][]byte{0: q, 1: kc, 2: vc, 3: part, 4: d})
	k.run("attn_decode_combine", [3]int{s.hq, 1, 1}, [3]int{32, 1, 1}, map[int][]byte{0: part, 1: gate, 2: out, 3: d})
	return unf32(out)
}

// testAttnDecode covers one key, contexts of several splits with a partial last split, splits
// that are not a multiple of the kernel's 16-key block (a partial block inside every split), D = 256,
// and the real geometry (16 query heads on 2 kv heads, D = 256) at a context of 1,000 keys.
func testAttnDecode(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(22, 1))
	for _, c := range []struct {
		s        attnShape
		n, split int
	}{{attnShape{4, 2, 64, 16}, 1, 4}, {attnShape{4, 2, 64, 16}, 37, 8}, {attnShape{2, 1, 256, 64}, 40, 16},
		{attnShape{4, 2, 64, 16}, 75, 40}, {attnShape{16, 2, 256, 64}, 1000, 48}} {
		s := c.s
		q, gate := randVec(rng, s.hq*s.d, 0.5), randVec(rng, s.hq*s.d, 1)
		kc, vc := roundF16(randVec(rng, c.n*s.hkv*s.d, 1)), roundF16(randVec(rng, c.n*s.hkv*s.d, 1))
		got := decodeAttend(k, s, f32(q), f32(gate), f16(kc), f16(vc), c.n, c.split)
		near(t, "attn_decode", got, refAttend(s, q, gate, kc, vc, c.n), attnTol)
	}
}

// testAttnPrefill covers one token, a chunk after a cached prefix, chunks that are not a multiple
// of the 8-row tiles or the 32-token threadgroup with a prefix that is not a multiple of the 16-key
// block, keys whose scores rise by more than FA_TAU across blocks (the rescaled path), and the real
// geometry (16 query heads on 2 kv heads, D = 256).
func testAttnPrefill(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(23, 1))
	for _, c := range []struct {
		s       attnShape
		pos0, T int
		rise    float32 // key j is scaled by 1 + rise·j: later blocks score higher
	}{{attnShape{4, 2, 64, 16}, 0, 1, 0}, {attnShape{4, 2, 64, 16}, 3, 9, 0}, {attnShape{4, 2, 64, 16}, 21, 45, 0},
		{attnShape{8, 2, 32, 8}, 5, 70, 0.5}, {attnShape{16, 2, 256, 64}, 13, 37, 0}} {
		s, n := c.s, c.pos0+c.T
		q, gate := randVec(rng, c.T*s.hq*s.d, 0.5), randVec(rng, c.T*s.hq*s.d, 1)
		kc, vc := randVec(rng, n*s.hkv*s.d, 1), roundF16(randVec(rng, n*s.hkv*s.d, 1))
		for j := 0; j < n; j++ {
			for i := range s.hkv * s.d {
				kc[j*s.hkv*s.d+i] *= 1 + c.rise*float32(j)
			}
		}
		kc = roundF16(kc)
		out := zeros(c.T * s.hq * s.d)
		k.run("attn_prefill", [3]int{ceil(c.T, 32), s.hq, 1}, [3]int{128, 1, 1}, map[int][]byte{0: f32(q), 1: f16(kc),
			2: f16(vc), 3: f32(gate), 4: out, 5: attnDims(s, c.pos0, c.T, n, 1)})
		var want []float32
		w := s.hq * s.d
		for tok := 0; tok < c.T; tok++ {
			want = append(want, refAttend(s, q[tok*w:(tok+1)*w], gate[tok*w:(tok+1)*w], kc, vc, c.pos0+tok+1)...)
		}
		near(t, "attn_prefill", unf32(out), want, attnTol)
	}
}

// attnSetup is a small attention layer with a KV cache already holding prefix positions (filled
// by ref), and the same cache as kernel buffers of capacity rows (fp16, as the engine keeps it).
type attnSetup struct {
	cfg    *checkpoint.Config
	w      *checkpoint.Attention
	s      attnShape
	cache  *ref.KVCache
	kc, vc []byte
}

func newAttnSetup(t *testing.T, rng *rand.Rand, bits, prefix, capacity int) *attnSetup {
	cfg := smallConfig(8, 2)
	a := &attnSetup{cfg: cfg, w: smallAttention(t, rng, cfg, bits), cache: &ref.KVCache{},
		s: attnShape{cfg.NumHeads, cfg.NumKVHeads, cfg.HeadDim, cfg.RotaryDim()}}
	if _, err := ref.GatedAttention(cfg, a.w, randRows(rng, prefix, cfg.HiddenSize, 1), 0, a.cache); err != nil {
		t.Fatal(err)
	}
	row := a.s.hkv * a.s.d
	a.kc, a.vc = make([]byte, 2*capacity*row), make([]byte, 2*capacity*row)
	copy(a.kc, f16Rows(a.cache.K))
	copy(a.vc, f16Rows(a.cache.V))
	return a
}

// testAttentionDecodeLayer: qmv q/k/v + attn_prep + attn_decode_split/combine + qmv_add o_proj
// vs ref.GatedAttention (a float32 cache), for consecutive decode steps over a context of several
// splits; the fp16 cache adds kvF16Tol.
func testAttentionDecodeLayer(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(24, 1))
	for _, bits := range []int{4, 8} {
		const prefix, steps, split = 13, 3, 5
		a := newAttnSetup(t, rng, bits, prefix, prefix+steps)
		h, s := a.cfg.HiddenSize, a.s
		for step := 0; step < steps; step++ {
			pos := prefix + step
			x, h0 := randVec(rng, h, 1), randVec(rng, h, 1)
			q2, kk, v := qmvRun(k, &a.w.Q, x), qmvRun(k, &a.w.K, x), qmvRun(k, &a.w.V, x)
			q, gate := zeros(s.hq*s.d), zeros(s.hq*s.d)
			k.run("attn_prep", [3]int{s.hq + s.hkv, 1, 1}, [3]int{32, 1, 1}, map[int][]byte{0: q2, 1: kk, 2: v,
				3: f32(a.w.QNorm), 4: f32(a.w.KNorm), 5: f32(ropeTable(pos, 1, s.rot, a.cfg.RopeTheta)),
				6: q, 7: gate, 8: a.kc, 9: a.vc, 10: attnDims(s, pos, 1, pos+1, split)})
			o := decodeAttend(k, s, q, gate, a.kc, a.vc, pos+1, split)
			y := f32(h0)
			runQMV(k, &a.w.O, o, y, true, shiftCases[0])
			want, err := ref.GatedAttention(a.cfg, a.w, [][]float32{x}, pos, a.cache)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want[0] {
				want[0][i] += h0[i]
			}
			near(t, "attention decode layer", unf32(y), want[0], attnLayerTol+kvF16Tol)
		}
	}
}

// testAttentionPrefillLayer: qmm q/k/v + attn_prep + attn_prefill + qmm o_proj (fused add) vs
// ref.GatedAttention, on a chunk that continues a cached prefix; T not a multiple of 8.
func testAttentionPrefillLayer(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(25, 1))
	for _, c := range []struct{ bits, prefix, T int }{{4, 0, 1}, {8, 6, 11}} {
		a := newAttnSetup(t, rng, c.bits, c.prefix, c.prefix+c.T)
		h, s, T := a.cfg.HiddenSize, a.s, c.T
		x, h0 := randRows(rng, T, h, 1), randRows(rng, T, h, 1)
		q2, kk, v := qmm(k, &a.w.Q, x), qmm(k, &a.w.K, x), qmm(k, &a.w.V, x)
		q, gate, o := zeros(T*s.hq*s.d), zeros(T*s.hq*s.d), zeros(T*s.hq*s.d)
		d := attnDims(s, c.prefix, T, c.prefix+T, 1)
		k.run("attn_prep", [3]int{s.hq + s.hkv, T, 1}, [3]int{32, 1, 1}, map[int][]byte{0: q2, 1: kk, 2: v,
			3: f32(a.w.QNorm), 4: f32(a.w.KNorm), 5: f32(ropeTable(c.prefix, T, s.rot, a.cfg.RopeTheta)),
			6: q, 7: gate, 8: a.kc, 9: a.vc, 10: d})
		k.run("attn_prefill", [3]int{ceil(T, 32), s.hq, 1}, [3]int{128, 1, 1}, map[int][]byte{0: q, 1: a.kc, 2: a.vc, 3: gate, 4: o, 5: d})
		y := flat(h0)
		bufs := map[int][]byte{3: o, 4: y, 5: dims(T, h, s.hq*s.d, c.bits, 1, 0)}
		bindQ(bufs, 0, &a.w.O)
		k.run("qmm_t32", [3]int{ceil(h, gemmTile), ceil(T, gemmTile), 1}, [3]int{128, 1, 1}, bufs)
		want, err := ref.GatedAttention(a.cfg, a.w, x, c.prefix, a.cache)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			for j := range want[i] {
				want[i][j] += h0[i][j]
			}
		}
		nearRows(t, "attention prefill layer", rowsOf(y, h), want, attnLayerTol+kvF16Tol)
		near(t, "attention prefill k cache", unf16(a.kc), roundF16(unf32(flat(a.cache.K))), attnTol+kvF16Ulp)
	}
}

// qmvRun runs qmv: W [Out, In] · x → [Out] (flat bytes).
func qmvRun(k kern, m *checkpoint.Matrix, x []float32) []byte {
	y := zeros(m.Out)
	runQMV(k, m, x, y, false, shiftCases[0])
	return y
}
