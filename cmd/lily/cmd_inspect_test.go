package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
)

func runInspect(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = realMain(append([]string{"inspect"}, args...), &o, &e)
	return code, o.String(), e.String()
}

func TestInspectJSONAndTable(t *testing.T) {
	d := checkpointtest.Tiny()
	specs := d.Specs("mlx")
	dir := t.TempDir()
	if err := checkpointtest.Write(dir, d.ConfigJSON("mlx"), specs, 2, 7); err != nil {
		t.Fatal(err)
	}
	if err := checkpointtest.WriteGeneration(dir, 250, 254); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runInspect("--model", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Model        string `json:"model"`
		Layout       string `json:"layout"`
		Quantization struct {
			Bits, GroupSize, Overrides int
			Mode                       string
		} `json:"quantization"`
		Tensors             int   `json:"tensors"`
		ParamsTotal         int64 `json:"params_total"`
		ParamsActive        int64 `json:"params_active"`
		BytesTotal          int64 `json:"bytes_total"`
		DecodeBytesPerToken int64 `json:"decode_bytes_per_token"`
		Layers              int   `json:"layers"`
		EOSTokenIDs         []int `json:"eos_token_ids"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("bad JSON %q: %v", out, err)
	}
	var stored int64
	for _, s := range specs {
		n := int64(s.DType.Size())
		for _, x := range s.Shape {
			n *= int64(x)
		}
		stored += n
	}
	if got.Model != dir || got.Layout != "mlx" || got.Tensors != len(specs) || got.Layers != d.NumLayers() ||
		got.BytesTotal != stored || got.Quantization.Bits != 4 || got.Quantization.Mode != "affine" ||
		got.Quantization.Overrides != 2*d.NumLayers() || got.EOSTokenIDs[1] != 254 {
		t.Fatalf("unexpected report %+v", got)
	}
	if !(got.ParamsActive > 0 && got.ParamsActive < got.ParamsTotal && got.DecodeBytesPerToken < got.BytesTotal) {
		t.Fatalf("inconsistent sizes %+v", got)
	}

	code, out, _ = runInspect("--model", dir)
	if code != 0 || !strings.Contains(out, "layout         mlx") || !strings.Contains(out, "affine 4-bit, group 32") {
		t.Fatalf("table (exit %d):\n%s", code, out)
	}
}

func TestInspectErrors(t *testing.T) {
	code, out, _ := runInspect("--help")
	if code != 0 || !strings.Contains(out, "usage: lily inspect") {
		t.Fatalf("--help: exit %d, %q", code, out)
	}
	if code, _, e := runInspect("--bogus"); code != 2 || !strings.Contains(e, "bogus") {
		t.Fatalf("unknown flag: exit %d, %q", code, e)
	}
	if code, _, e := runInspect("extra"); code != 2 || !strings.Contains(e, `unexpected argument "extra"`) {
		t.Fatalf("positional: exit %d, %q", code, e)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if code, _, e := runInspect("--model", missing); code != 1 || !strings.Contains(e, missing) {
		t.Fatalf("missing dir: exit %d, %q", code, e)
	}
	// A checkpoint whose shard is truncated fails with the file named.
	d := checkpointtest.Tiny()
	dir := t.TempDir()
	if err := checkpointtest.Write(dir, d.ConfigJSON("hf"), d.Specs("hf"), 1, 1); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "model.safetensors")
	if err := os.Truncate(p, 1000); err != nil {
		t.Fatal(err)
	}
	if code, _, e := runInspect("--model", dir); code != 1 || !strings.Contains(e, p) {
		t.Fatalf("truncated: exit %d, %q", code, e)
	}
	// No --model and an empty cache: the error says how to download the model.
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	if code, _, e := runInspect(); code != 1 || !strings.Contains(e, "hf download mlx-community/Qwen3.6-35B-A3B-4bit") {
		t.Fatalf("no model: exit %d, %q", code, e)
	}
}
