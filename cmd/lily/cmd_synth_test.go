package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runSynth(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = realMain(append([]string{"synth"}, args...), &o, &e)
	return code, o.String(), e.String()
}

func TestSynthHelp(t *testing.T) {
	for _, h := range []string{"--help", "-h"} {
		code, out, errOut := runSynth(h)
		assert.Equal(t, 0, code, h)
		assert.Contains(t, out, "usage: lily synth")
		assert.Contains(t, out, "--layout")
		assert.Empty(t, errOut)
	}
}

func TestSynthUsageErrors(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x")
	cases := map[string][]string{
		"unknown flag":     {"--preset", "tiny", "--layout", "mlx", "--out", out, "--bogus"},
		"missing preset":   {"--layout", "mlx", "--out", out},
		"missing layout":   {"--preset", "tiny", "--out", out},
		"missing out":      {"--preset", "tiny", "--layout", "mlx"},
		"bad preset":       {"--preset", "huge", "--layout", "mlx", "--out", out},
		"bad layout":       {"--preset", "tiny", "--layout", "gguf", "--out", out},
		"zero layers":      {"--preset", "tiny", "--layout", "mlx", "--layers", "0", "--out", out},
		"negative layers":  {"--preset", "tiny", "--layout", "mlx", "--layers", "-2", "--out", out},
		"non-number seed":  {"--preset", "tiny", "--layout", "mlx", "--seed", "abc", "--out", out},
		"negative seed":    {"--preset", "tiny", "--layout", "mlx", "--seed", "-1", "--out", out},
		"extra positional": {"--preset", "tiny", "--layout", "mlx", "--out", out, "more"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runSynth(args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, "lily synth: ")
			assert.Contains(t, stderr, "usage: lily synth")
			_, err := os.Stat(out)
			assert.ErrorIs(t, err, os.ErrNotExist, "nothing written")
		})
	}
}

func TestSynthWritesTiny(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tiny")
	code, stdout, stderr := runSynth("--preset", "tiny", "--layout", "mlx", "--layers", "5", "--seed", "3", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "5 layers")
	assert.Contains(t, stderr, "model-00001-of-00001.safetensors")

	var cfg struct {
		TextConfig struct {
			NumLayers  int      `json:"num_hidden_layers"`
			LayerTypes []string `json:"layer_types"`
		} `json:"text_config"`
		Quantization map[string]any `json:"quantization"`
	}
	b, err := os.ReadFile(filepath.Join(out, "config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &cfg))
	assert.Equal(t, 5, cfg.TextConfig.NumLayers)
	assert.Len(t, cfg.TextConfig.LayerTypes, 5)
	assert.Len(t, cfg.Quantization, 3+2*5)
	for _, f := range []string{"model-00001-of-00001.safetensors", "model.safetensors.index.json",
		"generation_config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"} {
		_, err := os.Stat(filepath.Join(out, f))
		assert.NoError(t, err, f)
	}

	// Writing again into the now non-empty directory is a runtime error, not a usage error.
	code, _, stderr = runSynth("--preset", "tiny", "--layout", "mlx", "--out", out)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "not empty")
}

func TestSynthDryRun(t *testing.T) {
	code, stdout, stderr := runSynth("--preset", "qwen3.6-35b-a3b", "--layout", "mlx", "--dry-run")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "19508787456 bytes in 4 shards")
	assert.Contains(t, stdout, "model-00004-of-00004.safetensors")
}
