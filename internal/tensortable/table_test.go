package tensortable

import (
	"strings"
	"testing"
)

// realDims is Qwen3.6-35B-A3B's sizes (model.md §1.2).
func realDims() Dims {
	return Dims{H: 2048, Vocab: 248320, Layers: 40, Interval: 4, Hq: 16, Hkv: 2, D: 256,
		Hk: 16, Hv: 32, Dk: 128, Dv: 128, K: 4, E: 256, I: 512, Is: 512}
}

// The table names every tensor once, under its layout's prefix, with the per-layer counts of
// model.md §2: 10 attention layers of 6 mixer tensors, 30 DeltaNet layers of 9, and an MoE block
// of 7 modules in HF (fused experts) or 8 in MLX (switch_mlp), 2 of them router-quantized; in MLX
// the 512 linear modules store 3 tensors each, 1757 in all, as the real checkpoint does.
func TestTextTable(t *testing.T) {
	for _, c := range []struct {
		l   Layout
		moe int
	}{{HF, 7}, {MLX, 8}} {
		ts := Text(realDims(), c.l)
		want := 3 + 40*2 + 10*6 + 30*9 + 40*c.moe
		if len(ts) != want {
			t.Fatalf("layout %d: %d tensors, want %d", c.l, len(ts), want)
		}
		seen, routers, linear := map[string]bool{}, 0, 0
		for _, x := range ts {
			if seen[x.Name] {
				t.Fatalf("layout %d: %q listed twice", c.l, x.Name)
			}
			seen[x.Name] = true
			if x.Name != LMHead(c.l) && !strings.HasPrefix(x.Name, Prefix(c.l)) {
				t.Fatalf("layout %d: %q outside the prefix %q", c.l, x.Name, Prefix(c.l))
			}
			if x.Router {
				routers++
			}
			if x.Kind == Linear {
				linear++
			}
			if c.l == MLX && x.Kind == FusedExperts {
				t.Fatalf("MLX lists the fused %q", x.Name)
			}
		}
		if routers != 80 {
			t.Fatalf("layout %d: %d router modules, want 80", c.l, routers)
		}
		if c.l == MLX && len(ts)+2*linear != 1757 {
			t.Fatalf("MLX: %d stored tensors (%d linear modules), want 1757", len(ts)+2*linear, linear)
		}
	}
}

// The conv weight is stored [C, 1, K] in HF and [C, K, 1] in MLX.
func TestConvShape(t *testing.T) {
	d := realDims()
	for _, c := range []struct {
		l    Layout
		want [3]int
	}{{HF, [3]int{d.ConvDim(), 1, d.K}}, {MLX, [3]int{d.ConvDim(), d.K, 1}}} {
		for _, x := range DeltaNet(d, c.l, "p.") {
			if x.Kind == Conv && (len(x.Shape) != 3 || [3]int(x.Shape) != c.want) {
				t.Fatalf("layout %d: conv shape %v, want %v", c.l, x.Shape, c.want)
			}
		}
	}
}
