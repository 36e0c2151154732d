package checkpoint

import (
	"errors"
	"fmt"
	"github.com/lily-engine/lily/internal/safefile"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// DefaultRepo is the Hugging Face repository lily serves when no --model is given.
const DefaultRepo = "mlx-community/Qwen3.6-35B-A3B-4bit"

// Locate returns the checkpoint directory to open: explicit when set (it must be a directory),
// else the DefaultRepo snapshot in the Hugging Face cache ($HF_HUB_CACHE, else $HF_HOME/hub,
// else ~/.cache/huggingface/hub). The snapshot refs/main points at wins; otherwise the most
// recently modified snapshot holding a config.json. When none is found the error says how to
// download it.
func Locate(explicit string) (string, error) {
	if explicit != "" {
		st, err := os.Stat(explicit)
		if err != nil {
			return "", fmt.Errorf("checkpoint: --model: %w", err)
		}
		if !st.IsDir() {
			return "", fmt.Errorf("checkpoint: --model %s is not a directory", explicit)
		}
		return explicit, nil
	}
	hub, err := hubCache()
	if err != nil {
		return "", err
	}
	repoDir := filepath.Join(hub, "models--"+strings.ReplaceAll(DefaultRepo, "/", "--"))
	if dir, ok := snapshot(repoDir); ok {
		return dir, nil
	}
	return "", fmt.Errorf("checkpoint: no --model given and %s is not in the Hugging Face cache (%s).\n"+
		"Download it with:\n    hf download %s\n(or the older: huggingface-cli download %s),\n"+
		"or pass --model DIR pointing at a checkpoint directory", DefaultRepo, repoDir, DefaultRepo, DefaultRepo)
}

// hubCache is the Hugging Face hub cache directory, as huggingface_hub resolves it.
func hubCache() (string, error) {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d, nil
	}
	if d := os.Getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("checkpoint: no --model given, and neither HF_HUB_CACHE, HF_HOME nor a home directory is set")
	}
	return filepath.Join(home, ".cache", "huggingface", "hub"), nil
}

// snapshot picks the snapshot directory of a cached repo.
func snapshot(repoDir string) (string, bool) {
	snaps := filepath.Join(repoDir, "snapshots")
	if ref, err := safefile.ReadFile(filepath.Join(repoDir, "refs", "main"), 4<<10); err == nil {
		rev := strings.TrimSpace(string(ref))
		dir := filepath.Join(snaps, rev)
		if rev != "" && filepath.Base(rev) == rev && hasConfig(dir) {
			return dir, true
		}
	}
	entries, err := os.ReadDir(snaps)
	if err != nil {
		return "", false
	}
	type cand struct {
		dir string
		mod int64
	}
	var cands []cand
	for _, e := range entries {
		dir := filepath.Join(snaps, e.Name())
		if st, err := os.Stat(dir); err == nil && st.IsDir() && hasConfig(dir) {
			cands = append(cands, cand{dir, st.ModTime().UnixNano()})
		}
	}
	if len(cands) == 0 {
		return "", false
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].mod > cands[j].mod })
	return cands[0].dir, true
}

func hasConfig(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "config.json"))
	return err == nil
}
