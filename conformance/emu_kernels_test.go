package conformance

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lily-engine/lily/metal/budget"
	"github.com/lily-engine/lily/ref"
)

// TestEmuKernels runs every Metal kernel in the CPU emulator (metal/emu) against its ref
// counterpart: single kernels on seeded random shapes, and whole layers composed of kernels
// ("layer/…", in emu_attn_test.go, emu_deltanet_test.go and emu_moe_test.go) on a small random model
// (emu_model_test.go). One emulator build serves every subtest; every kernel must have one.
func TestEmuKernels(t *testing.T) {
	e := buildEmu(t)
	cases := []struct {
		name    string
		fn      func(*testing.T, kern)
		kernels []string // the kernels the subtest checks
	}{
		{"qmv_fast", testQMVFast, []string{"qmv_4", "qmv_8", "qmv_add_4", "qmv_add_8"}},
		{"qmv_fast_norm", testQMVNorm, []string{"qmv_norm_4", "qmv_norm_8"}},
		{"router_norm", testRouterNorm, []string{"router_qmv_norm_4", "router_qmv_norm_8"}},
		{"moe_gate_up_norm", testMoEGateUpNorm, []string{"moe_gate_up_norm_4", "moe_gate_up_norm_8"}},
		{"rms_norm", testRMSNorm, []string{"rms_norm"}},
		{"embed", testEmbed, []string{"embed"}},
		{"swiglu", testSwiGLU, []string{"swiglu"}},
		{"qmm_t32", testQMM, []string{"qmm_t32"}},
		{"logits_topk", testLogitsTopK, []string{"logits_topk_part", "logits_topk_merge"}},
		{"router", testRouterTopK, []string{"router_qmv_4", "router_qmv_8", "router_softmax_topk"}},
		{"router/nan", testRouterNaN, nil},
		{"moe_grouping", testMoEGrouping, []string{"moe_count", "moe_scan", "moe_scatter", "moe_tiles"}},
		{"abi_probe", testABIProbe, []string{"abi_probe"}},
		{"attn_prep", testAttnPrep, []string{"attn_prep"}},
		{"attn_decode", testAttnDecode, []string{"attn_decode_split", "attn_decode_combine"}},
		{"attn_prefill", testAttnPrefill, []string{"attn_prefill"}},
		{"deltanet_scan", testDeltaNetScan, []string{"deltanet_conv", "deltanet_scan"}},
		{"layer/attention_decode", testAttentionDecodeLayer, nil},
		{"layer/attention_prefill", testAttentionPrefillLayer, nil},
		{"layer/deltanet", testDeltaNetLayer, nil},
		{"layer/moe_decode", testMoEDecodeLayer, []string{"moe_gate_up_4", "moe_gate_up_8", "moe_down_4", "moe_down_8"}},
		{"layer/moe_prefill", testMoEPrefillLayer, []string{"moe_gemm_t32_gate_up", "moe_gemm_t32_down", "moe_combine"}},
	}
	untested := libraryKernels(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, kern{t, e}) })
		for _, k := range c.kernels {
			delete(untested, k)
		}
	}
	for k := range untested {
		t.Errorf("kernel %s has no conformance subtest", k)
	}
}

const matvecTol = budget.MatVec // the budget and why: metal/budget

// shapeCase is one random mat-vec / GEMM shape: out and T deliberately not multiples of 8.
type shapeCase struct{ out, in, t, bits int }

func randomShapes(rng *rand.Rand, n int) []shapeCase {
	cs := []shapeCase{{out: 1, in: 64, t: 1, bits: 4}, {out: 37, in: 192, t: 11, bits: 8},
		{out: 19, in: 4096, t: 3, bits: 4}} // the real out_proj/o_proj input width
	for len(cs) < n {
		cs = append(cs, shapeCase{out: 1 + rng.IntN(70), in: groupSize * (1 + rng.IntN(4)), t: 1 + rng.IntN(17),
			bits: []int{4, 8}[rng.IntN(2)]})
	}
	return cs
}

const normTol = budget.Norm // the budget and why: metal/budget

func testRMSNorm(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(3, 1))
	for _, n := range []int{128, 333} {
		const T = 3
		x, w := randRows(rng, T, n, 2), randVec(rng, n, 0.3)
		var want [][]float32
		for _, r := range x {
			o := make([]float32, n)
			ref.RMSNorm(o, r, w, 1e-6)
			want = append(want, o)
		}
		bufs := map[int][]byte{0: flat(x), 1: f32(w), 2: zeros(T * n), 3: dims(n, float32(1e-6))}
		k.run("rms_norm", [3]int{T, 1, 1}, [3]int{256, 1, 1}, bufs)
		nearRows(t, "rms_norm", rowsOf(bufs[2], n), want, normTol)
	}
}

func testEmbed(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(4, 1))
	for i, bits := range []int{4, 8} {
		const vocab, h = 50, 320
		m := qmat(t, rng, "embed", 0, vocab, h, bits)
		ids := []int32{7, 0, 49, 7}
		var want [][]float32
		for _, id := range ids {
			r, err := ref.Embed(&m, id)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, r)
		}
		bufs := map[int][]byte{3: i32(ids), 4: zeros(len(ids) * h)}
		bufs[5] = dims(vocab, h, bits, bindQShifted(bufs, 0, &m, shiftCases[2+i]))
		k.run("embed", [3]int{ceil(h, 256), len(ids), 1}, [3]int{256, 1, 1}, bufs)
		// Exact: both compute float32(scale·q) + bias from the same bf16 scale and bias.
		nearRows(t, "embed", rowsOf(bufs[4], h), want, 0)
	}
}

const eltTol = budget.Elt // the budget and why: metal/budget

func testSwiGLU(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(5, 1))
	const n = 300
	g, u := randVec(rng, n, 3), randVec(rng, n, 1)
	want := make([]float32, n)
	for i := range want {
		want[i] = ref.SiLU(g[i]) * u[i]
	}
	bufs := map[int][]byte{0: f32(g), 1: f32(u), 2: dims(n)}
	k.run("swiglu", [3]int{ceil(n, 256), 1, 1}, [3]int{256, 1, 1}, bufs)
	near(t, "swiglu", unf32(bufs[0]), want, eltTol)
}

// testQMM: qmm_t32 vs ref.Linear on random shapes (rows and tokens not multiples of the 32 tile,
// K a multiple of 64 but not of every step count), then real widths with tails: the DeltaNet
// out_proj (2,048 × 4,096) over 45 tokens, and 8-bit 100 × 2,048 over 33 tokens (one token past
// a tile).
func testQMM(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(6, 1))
	cases := append(randomShapes(rng, 4), shapeCase{out: 2048, in: 4096, t: 45, bits: 4}, shapeCase{out: 100, in: 2048, t: 33, bits: 8},
		shapeCase{out: 70, in: 64, t: 64, bits: 4})
	for i, c := range cases {
		m := qmat(t, rng, "w", 0, c.out, c.in, c.bits)
		x := randRows(rng, c.t, c.in, 1)
		want, err := ref.Linear(&m, 0, x)
		if err != nil {
			t.Fatal(err)
		}
		add := i % 2 // odd cases use the fused residual add
		y0 := randRows(rng, c.t, c.out, 1)
		if add == 1 {
			for r := range want {
				for j := range want[r] {
					want[r][j] += y0[r][j]
				}
			}
		}
		bufs := map[int][]byte{3: flat(x), 4: flat(y0)}
		bufs[5] = dims(c.t, c.out, c.in, c.bits, add, bindQShifted(bufs, 0, &m, shiftCases[i%len(shiftCases)]))
		k.run("qmm_t32", [3]int{ceil(c.out, gemmTile), ceil(c.t, gemmTile), 1}, [3]int{128, 1, 1}, bufs)
		nearRows(t, fmt.Sprintf("qmm_t32 %d×%d T=%d %d-bit", c.out, c.in, c.t, c.bits), rowsOf(bufs[4], c.out), want, gemmTol)
	}
}

const gemmTol = budget.Gemm // the budget and why: metal/budget
