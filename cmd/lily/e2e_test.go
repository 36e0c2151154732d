package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestSynthInspectRun drives the binary's commands end to end: synthesize the tiny preset in both
// layouts, inspect them (same logical parameter counts, different stored bytes), and generate.
func TestSynthInspectRun(t *testing.T) {
	stats := map[string]map[string]any{}
	for _, layout := range []string{"hf", "mlx"} {
		dir := filepath.Join(t.TempDir(), layout)
		if code, _, e := runLily("synth", "--preset", "tiny", "--layout", layout, "--seed", "5", "--out", dir); code != 0 {
			t.Fatalf("synth %s: exit %d: %s", layout, code, e)
		}
		code, out, e := runLily("inspect", "--model", dir, "--json")
		if code != 0 {
			t.Fatalf("inspect %s: exit %d: %s", layout, code, e)
		}
		var s map[string]any
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("inspect %s: %v\n%s", layout, err, out)
		}
		if s["layout"] != layout {
			t.Fatalf("inspect reports layout %v for %s", s["layout"], layout)
		}
		stats[layout] = s
		code, out, e = runLily("run", "--model", dir, "--prompt-ids", "1,2,3", "--max-tokens", "4", "--json")
		if code != 0 {
			t.Fatalf("run %s: exit %d: %s", layout, code, e)
		}
		var r struct {
			TokenIDs []int32   `json:"token_ids"`
			Logprobs []float64 `json:"logprobs"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.TokenIDs) == 0 || len(r.Logprobs) != len(r.TokenIDs) {
			t.Fatalf("run %s: %v %+v\n%s", layout, err, r, out)
		}
	}
	if stats["hf"]["params_total"] != stats["mlx"]["params_total"] || stats["hf"]["params_active"] != stats["mlx"]["params_active"] {
		t.Fatalf("layouts disagree on parameters: hf %v/%v, mlx %v/%v", stats["hf"]["params_total"], stats["hf"]["params_active"],
			stats["mlx"]["params_total"], stats["mlx"]["params_active"])
	}
	if stats["hf"]["bytes_total"] == stats["mlx"]["bytes_total"] {
		t.Fatal("hf and mlx report the same stored bytes")
	}
}
