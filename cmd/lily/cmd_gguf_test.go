package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lily-engine/lily/internal/gguf"
)

func runGGUF(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = realMain(append([]string{"gguf"}, args...), &o, &e)
	return code, o.String(), e.String()
}

func TestGGUFWritesAndRefuses(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "tiny.gguf")
	code, stdout, stderr := runGGUF("--model", "../../fixtures/models/tiny-a/mlx", "--out", out)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "qwen35moe")
	f, err := os.Open(out)
	require.NoError(t, err)
	info, err := gguf.ReadInfo(f)
	f.Close()
	require.NoError(t, err)
	require.Equal(t, gguf.Q4_0, info.Tensor("blk.0.attn_qkv.weight").Type)
	st, err := os.Stat(out)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())

	// An existing file is not overwritten; nothing else is left in the directory.
	code, _, stderr = runGGUF("--model", "../../fixtures/models/tiny-a/mlx", "--out", out)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "exists")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--model", "../../fixtures/models/tiny-a/mlx"}, 2, "--out is required"},
		{[]string{"--model", "../../fixtures/models/tiny-a/mlx", "--type", "q8_0", "--out", out + "2"}, 2, `--type "q8_0"`},
		{[]string{"--model", filepath.Join(dir, "missing"), "--out", out + "3"}, 1, "lily gguf:"},
		{[]string{"--out", out + "4", "extra"}, 2, "unexpected argument"},
	} {
		code, _, stderr := runGGUF(c.args...)
		require.Equal(t, c.code, code, strings.Join(c.args, " "))
		require.Contains(t, stderr, c.want)
	}
}
