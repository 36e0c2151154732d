package perfmodel

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
)

var update = flag.Bool("update", false, "rewrite docs/metal-performance.md from the performance model")

// docContext is the context (decode) and prompt length (prefill) the document reports: the 1K
// point of the published protocol.
const docContext = 1024

// realConfig is the published Qwen3.6-35B-A3B MLX 4-bit config (model.md §1.1, §2.4).
func realConfig(t *testing.T) *checkpoint.Config {
	t.Helper()
	cfg, err := checkpoint.ParseConfig(checkpointtest.Real().ConfigJSON("mlx"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func sum(cs []Cost, f func(Cost) float64) float64 {
	var s float64
	for _, c := range cs {
		s += f(c)
	}
	return s
}

// writeSparseCheckpoint writes the real-size checkpoint's config (layout "mlx" or "hf") and a model.safetensors whose
// header lists every tensor and whose data is a hole (zeros, no disk blocks): the loader checks
// every shape and reads only the small vectors.
func writeSparseCheckpoint(t *testing.T, dir, layout string) {
	t.Helper()
	d := checkpointtest.Real()
	hdr := map[string]any{}
	var off int64
	for _, s := range d.Specs(layout) {
		n := int64(s.DType.Size())
		for _, x := range s.Shape {
			n *= int64(x)
		}
		hdr[s.Name] = map[string]any{"dtype": s.DType.String(), "shape": s.Shape, "data_offsets": []int64{off, off + n}}
		off += n
	}
	j, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := binary.LittleEndian.AppendUint64(nil, uint64(len(j)))
	if _, err := f.Write(append(head, j...)); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(8+len(j)) + off); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), d.ConfigJSON(layout), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPerfModelCheckpointBytes checks the model's arithmetic against the loader on the real shapes
// of both layouts (MLX 4-bit, HF bf16):
// the weight bytes of the decode kernels are exactly the checkpoint's decode_bytes_per_token, the
// mat-vec FLOPs are 2 per active matrix parameter, and the state and KV traffic are what the layer
// sizes say (model.md §4.3 step 7: 2 MiB fp32 state per DeltaNet layer; the KV cache is fp16).
func TestPerfModelCheckpointBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("maps sparse real-size checkpoints (19.5 GB and 69 GB apparent size); skipped in -short")
	}
	for _, layout := range []string{"mlx", "hf"} {
		t.Run(layout, func(t *testing.T) { checkDecodeAccounting(t, layout) })
	}
}

func checkDecodeAccounting(t *testing.T, layout string) {
	dir := t.TempDir()
	writeSparseCheckpoint(t, dir, layout)
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	st, cfg := ck.Stats(), ck.Config
	const ctx = 1000
	cs, err := DecodeCosts(cfg, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := sum(cs, func(c Cost) float64 { return c.Weights }); int64(got) != st.DecodeBytesPerToken || got != float64(int64(got)) {
		t.Errorf("decode weight bytes %.0f, checkpoint decode_bytes_per_token %d", got, st.DecodeBytesPerToken)
	}
	// Vectors are parameters the kernels read but do not multiply with a token's activations.
	H, L := cfg.HiddenSize, cfg.NumLayers
	nG, nA := cfg.NumLayersOf(checkpoint.LinearAttention), cfg.NumLayersOf(checkpoint.FullAttention)
	vectors := 2*L*H + H + nG*(cfg.ConvDim()*cfg.LinearConvKernel+2*cfg.LinearNumValueHeads+cfg.LinearValueHeadDim) +
		nA*2*cfg.HeadDim
	var matFLOPs float64
	for _, c := range cs {
		switch c.Kernel {
		case "qmv_4", "qmv_8", "qmv_add_4", "qmv_add_8", "router_qmv_4", "router_qmv_8",
			"moe_gate_up_4", "moe_gate_up_8", "moe_down_4", "moe_down_8",
			"qmv_norm_4", "qmv_norm_8", "router_qmv_norm_4", "router_qmv_norm_8", "moe_gate_up_norm_4", "moe_gate_up_norm_8":
			matFLOPs += c.FLOPs
		}
	}
	moeAct := float64(5 * L * (cfg.NumExpertsPerTok*cfg.MoEIntermediate + cfg.SharedIntermediate)) // SwiGLU
	if want := 2 * float64(st.ParamsActive-int64(vectors)); matFLOPs-moeAct != want {
		t.Errorf("mat-vec FLOPs %.0f, want 2 × (params_active − vectors) = %.0f", matFLOPs-moeAct, want)
	}
	wantState := float64(nG * 2 * 4 * (cfg.LinearNumValueHeads*cfg.LinearKeyHeadDim*cfg.LinearValueHeadDim +
		(cfg.LinearConvKernel-1)*cfg.ConvDim()))
	if got := sum(cs, func(c Cost) float64 { return c.State }); got != wantState {
		t.Errorf("decode state bytes %.0f, want %.0f", got, wantState)
	}
	kvRow := float64(2 * cfg.NumKVHeads * cfg.HeadDim * 2) // one position's K and V of one layer, fp16
	if got, want := sum(cs, func(c Cost) float64 { return c.KV }), float64(nA)*kvRow*(ctx+1+1); got != want {
		t.Errorf("decode KV bytes %.0f, want %.0f (read ctx+1 rows, append one)", got, want)
	}
	t.Logf("decode_bytes_per_token %d; params_active %d", st.DecodeBytesPerToken, st.ParamsActive)
}

// TestPerfModelRoofline checks the model is a bound: the published figures must not beat it.
func TestPerfModelRoofline(t *testing.T) {
	cfg := realConfig(t)
	d, p, err := Predict(M5Max(), cfg, docContext)
	if err != nil {
		t.Fatal(err)
	}
	if d < PublishedDecodeTokS || p < PublishedPrefillTokS {
		t.Errorf("model predicts %.0f decode and %.0f prefill tok/s, below the published %d and %d",
			d, p, PublishedDecodeTokS, PublishedPrefillTokS)
	}
	if _, err := PrefillCosts(cfg, 0); err == nil {
		t.Error("PrefillCosts(0): no error")
	}
}

// TestPerfModelDoc checks that docs/metal-performance.md is what the model generates; run with
// -update to rewrite it.
func TestPerfModelDoc(t *testing.T) {
	cfg, pc := realPlans(t)
	doc, err := perfDoc(cfg, M5Max(), pc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "metal-performance.md")
	if *update {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != doc {
		t.Fatalf("%s is stale: run go test ./metal/perfmodel -run TestPerfModelDoc -update", path)
	}
}
