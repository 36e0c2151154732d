package tokenizer_test

import (
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lily-engine/lily/internal/tokenizer"
)

// The goldens are written by fixtures/gen/tokenizer_goldens.mjs with Hugging Face's tokenizers.
const fixtureDir = "../../fixtures/tokenizer"

var tokenizerFiles = map[string]string{
	"qwen3":       "qwen3/tokenizer.json.gz",
	"qwen36-tiny": "qwen36-tiny/tokenizer.json",
}

type goldenFile struct {
	Reference string `json:"reference"`
	Tokenizer string `json:"tokenizer"`
	Encode    []struct {
		Text string  `json:"t"`
		Hex  string  `json:"hex"`
		IDs  []int32 `json:"ids"`
		D    *string `json:"d"`  // HF decode(ids, false) where it differs from the text
		DS   *string `json:"ds"` // HF decode(ids, true) where it differs from d
	} `json:"encode"`
	Decode []struct {
		IDs []int32 `json:"ids"`
		D   string  `json:"d"`
		DS  string  `json:"ds"`
	} `json:"decode"`
}

// loaded caches each tokenizer across tests: the Qwen3 one takes a moment to parse.
var loaded sync.Map

func load(t testing.TB, name string) *tokenizer.Tokenizer {
	t.Helper()
	if v, ok := loaded.Load(name); ok {
		return v.(*tokenizer.Tokenizer)
	}
	tk, err := tokenizer.Load(filepath.Join(fixtureDir, tokenizerFiles[name]))
	if err != nil {
		t.Fatal(err)
	}
	loaded.Store(name, tk)
	return tk
}

func readGolden(t *testing.T, name string) *goldenFile {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtureDir, "goldens", name+".json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var g goldenFile
	if err := json.NewDecoder(zr).Decode(&g); err != nil {
		t.Fatal(err)
	}
	if g.Tokenizer != name || !strings.HasPrefix(g.Reference, "@anush008/tokenizers ") || len(g.Encode) < 2000 {
		t.Fatalf("golden %s: unexpected header %q %q or only %d cases", name, g.Tokenizer, g.Reference, len(g.Encode))
	}
	return &g
}

func TestGoldens(t *testing.T) {
	for name := range tokenizerFiles {
		t.Run(name, func(t *testing.T) {
			tk := load(t, name)
			g := readGolden(t, name)
			fails := 0
			for i, c := range g.Encode {
				text := c.Text
				if c.Hex != "" {
					b, err := hex.DecodeString(c.Hex)
					if err != nil {
						t.Fatal(err)
					}
					text = string(b)
				}
				got := tk.Encode(text)
				if !slices.Equal(got, c.IDs) {
					t.Errorf("case %d Encode(%+q) = %v, reference %v", i, text, got, c.IDs)
					fails++
				}
				// Decode of the reference ids must give the reference text, with and without special tokens.
				want := c.Text
				if c.D != nil {
					want = *c.D
				}
				wantSkip := want
				if c.DS != nil {
					wantSkip = *c.DS
				}
				checkDecode(t, tk, c.IDs, want, wantSkip)
				if fails > 20 {
					t.Fatal("too many failures")
				}
			}
			for _, c := range g.Decode {
				checkDecode(t, tk, c.IDs, c.D, c.DS)
			}
		})
	}
}

// checkDecode checks Decode and the streaming decoder against the reference's text.
func checkDecode(t *testing.T, tk *tokenizer.Tokenizer, ids []int32, want, wantSkip string) {
	t.Helper()
	for _, skip := range []bool{false, true} {
		w := want
		if skip {
			w = wantSkip
		}
		got, err := tk.Decode(ids, skip)
		if err != nil || got != w {
			t.Errorf("Decode(%v, %v) = %+q, %v; reference %+q", ids, skip, got, err, w)
		}
		if s := streamDecode(t, tk, ids, skip); s != w {
			t.Errorf("stream decode of %v (skip %v) = %+q; reference %+q", ids, skip, s, w)
		}
	}
}

func streamDecode(t testing.TB, tk *tokenizer.Tokenizer, ids []int32, skip bool) string {
	t.Helper()
	d := tk.NewDecoder(skip)
	var sb strings.Builder
	for _, id := range ids {
		s, err := d.Add(id)
		if err != nil {
			t.Fatalf("Add(%d): %v", id, err)
		}
		sb.WriteString(s)
	}
	sb.WriteString(d.Flush())
	return sb.String()
}
