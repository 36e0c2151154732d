package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fakeSnapshot creates hub/models--mlx-community--Qwen3.6-35B-A3B-4bit/snapshots/rev with a
// config.json and returns its path.
func fakeSnapshot(t *testing.T, hub, rev string) string {
	t.Helper()
	dir := filepath.Join(hub, "models--mlx-community--Qwen3.6-35B-A3B-4bit", "snapshots", rev)
	noErr(t, os.MkdirAll(dir, 0o755))
	noErr(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{}`), 0o644))
	return dir
}

func TestLocateExplicit(t *testing.T) {
	dir := t.TempDir()
	got, err := Locate(dir)
	noErr(t, err)
	eq(t, got, dir)
	_, err = Locate(filepath.Join(dir, "absent"))
	errHas(t, err, "--model", "absent")
	f := filepath.Join(dir, "file")
	noErr(t, os.WriteFile(f, nil, 0o644))
	_, err = Locate(f)
	errHas(t, err, "not a directory")
}

func TestLocateHFCache(t *testing.T) {
	root := t.TempDir()
	t.Setenv("HOME", filepath.Join(root, "home"))
	t.Setenv("HF_HOME", "")
	t.Setenv("HF_HUB_CACHE", "")

	// Nothing cached: the error says how to download the model.
	_, err := Locate("")
	errHas(t, err, "hf download mlx-community/Qwen3.6-35B-A3B-4bit",
		"huggingface-cli download mlx-community/Qwen3.6-35B-A3B-4bit", filepath.Join(root, "home", ".cache", "huggingface", "hub"))

	// ~/.cache/huggingface/hub; the newest snapshot wins without refs/main.
	homeHub := filepath.Join(root, "home", ".cache", "huggingface", "hub")
	old := fakeSnapshot(t, homeHub, "aaa")
	newer := fakeSnapshot(t, homeHub, "bbb")
	past := time.Now().Add(-time.Hour)
	noErr(t, os.Chtimes(old, past, past))
	got, err := Locate("")
	noErr(t, err)
	eq(t, got, newer)

	// refs/main wins over modification time.
	refs := filepath.Join(homeHub, "models--mlx-community--Qwen3.6-35B-A3B-4bit", "refs")
	noErr(t, os.MkdirAll(refs, 0o755))
	noErr(t, os.WriteFile(filepath.Join(refs, "main"), []byte("aaa\n"), 0o644))
	got, err = Locate("")
	noErr(t, err)
	eq(t, got, old)

	// HF_HOME/hub beats the home directory; HF_HUB_CACHE beats both.
	hfHome := filepath.Join(root, "hfhome")
	inHome := fakeSnapshot(t, filepath.Join(hfHome, "hub"), "ccc")
	t.Setenv("HF_HOME", hfHome)
	got, err = Locate("")
	noErr(t, err)
	eq(t, got, inHome)

	cache := filepath.Join(root, "cache")
	inCache := fakeSnapshot(t, cache, "ddd")
	t.Setenv("HF_HUB_CACHE", cache)
	got, err = Locate("")
	noErr(t, err)
	eq(t, got, inCache)

	// A snapshot without config.json (an interrupted download) does not count.
	noErr(t, os.Remove(filepath.Join(inCache, "config.json")))
	_, err = Locate("")
	errHas(t, err, cache, "hf download")
}
