package tensortable

import (
	"strings"
	"testing"
)

// realDims is Qwen3.6-35B-A3B's sizes (model.md §1.2).
func realDims() Dims {
	return Dims{H: 2048, Vocab: 248320, LayerTypes: Interleaved(40, 4), Hq: 16, Hkv: 2, D: 256, Rot: 64,
		Hk: 16, Hv: 32, Dk: 128, Dv: 128, K: 4, E: 256, TopK: 8, I: 512, Is: 512}
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
			if x.Name != LMHead(realDims(), c.l).Name && !strings.HasPrefix(x.Name, Prefix(c.l)) {
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
		x := DeltaNet(d, c.l, "p.").Conv
		if x.Kind != Conv || len(x.Shape) != 3 || [3]int(x.Shape) != c.want {
			t.Fatalf("layout %d: conv %v shape %v, want %v", c.l, x.Kind, x.Shape, c.want)
		}
	}
}

// The derived sizes of the real model, against model.md §1.2 and §1.1's figures: conv_dim 8192,
// 30 DeltaNet and 10 attention layers with the 4th, 8th, … full, a DeltaNet state of
// 32·128·128 + 8192·3 floats and 512 cached K values per position.
func TestRealDims(t *testing.T) {
	d := realDims()
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"layers", d.NumLayers(), 40}, {"DeltaNet layers", d.Count(LinearAttention), 30},
		{"attention layers", d.Count(FullAttention), 10}, {"key dim", d.KeyDim(), 2048},
		{"value dim", d.ValueDim(), 4096}, {"conv dim", d.ConvDim(), 8192},
		{"state", d.DeltaNetState(), 32*128*128 + 8192*3}, {"kv width", d.KVWidth(), 512},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	for i := range 40 {
		if d.IsFull(i) != (i%4 == 3) {
			t.Errorf("layer %d: full %v", i, d.IsFull(i))
		}
	}
}

// LayerIndex reads back the index LayerPrefix wrote and refuses names outside the layers.
func TestLayerIndex(t *testing.T) {
	p := Prefix(MLX)
	for _, i := range []int{0, 7, 39} {
		name := Layer(realDims(), MLX, p, i).MoE.Router.Name
		if got, ok := LayerIndex(p, name); !ok || got != i {
			t.Errorf("LayerIndex(%q) = %d, %v; want %d", name, got, ok, i)
		}
	}
	for _, name := range []string{Embed(realDims(), p).Name, p + "layers.x.norm", p + "layers.-1.mlp.gate", Prefix(HF) + "layers.1.mlp"} {
		if i, ok := LayerIndex(p, name); ok {
			t.Errorf("LayerIndex(%q) = %d, want none", name, i)
		}
	}
}

// No tensor of the text table is outside the text model, and the vision tower and MTP head are.
func TestIsOutsideText(t *testing.T) {
	for _, l := range []Layout{HF, MLX} {
		for _, x := range Text(realDims(), l) {
			if IsOutsideText(x.Name) {
				t.Fatalf("%q counted outside the text model", x.Name)
			}
		}
	}
	for _, name := range []string{"model.visual.blocks.0.attn.qkv.weight", "vision_tower.patch_embed.proj.weight",
		"mtp.fc.weight", "language_model.mtp.layers.0.mlp.gate.weight"} {
		if !IsOutsideText(name) {
			t.Errorf("%q counted in the text model", name)
		}
	}
}
