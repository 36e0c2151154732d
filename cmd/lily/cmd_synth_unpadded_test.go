package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSynthUnpaddedHeaderServes writes the same tiny MLX checkpoint with padded and with unpadded
// (MLX-style) safetensors headers: the unpadded shard's data must start at an offset that is not
// 4-byte aligned, and both must load and generate the same tokens and log-probabilities on the
// CPU path (ref and fast).
func TestSynthUnpaddedHeaderServes(t *testing.T) {
	dir := t.TempDir()
	padded, unpadded := filepath.Join(dir, "padded"), filepath.Join(dir, "unpadded")
	code, _, stderr := runSynth("--preset", "tiny", "--layout", "mlx", "--seed", "4", "--out", padded)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runSynth("--preset", "tiny", "--layout", "mlx", "--seed", "4", "--unpadded-header", "--out", unpadded)
	require.Equal(t, 0, code, stderr)

	shard := "model-00001-of-00001.safetensors"
	p, err := os.ReadFile(filepath.Join(padded, shard))
	require.NoError(t, err)
	u, err := os.ReadFile(filepath.Join(unpadded, shard))
	require.NoError(t, err)
	pStart, uStart := 8+binary.LittleEndian.Uint64(p), 8+binary.LittleEndian.Uint64(u)
	assert.Equal(t, uint64(0), pStart%8, "lily's padded header")
	assert.NotEqual(t, uint64(0), uStart%4, "the unpadded shard's data should start unaligned")
	assert.NotEqual(t, byte(' '), u[uStart-1], "no padding before the data")
	assert.Equal(t, len(p)-int(pStart), len(u)-int(uStart), "same data size")

	for _, backend := range [][]string{{"--backend", "ref"}, {"--backend", "fast", "--device", "cpu"}} {
		var outs [2]string
		for i, m := range []string{padded, unpadded} {
			var o, e bytes.Buffer
			args := append([]string{"run", "--model", m, "--prompt-ids", "1,2,3,4,5", "--max-tokens", "4", "--logprobs", "2", "--json"}, backend...)
			code := realMain(args, &o, &e)
			require.Equal(t, 0, code, "%v on %s: %s", backend, m, e.String())
			outs[i] = o.String()
		}
		assert.Equal(t, outs[0], outs[1], "%v: the unpadded checkpoint generates differently", backend)
	}
}
