package tokenizer_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lily-engine/lily/internal/tokenizer"
)

func tinyJSON(t testing.TB) []byte { return readTokenizerJSON(t, "qwen36-tiny") }

// readTokenizerJSON returns a fixture tokenizer.json, gunzipped where it is stored gzipped.
func readTokenizerJSON(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, tokenizerFiles[name]))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(tokenizerFiles[name], ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return data
}

// fileAddedTokens reads the added tokens straight from the JSON, independently of the package.
func fileAddedTokens(t testing.TB, data []byte) []struct {
	ID      int32  `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
} {
	t.Helper()
	var f struct {
		AddedTokens []struct {
			ID      int32  `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f.AddedTokens
}

func TestParseErrors(t *testing.T) {
	base := tinyJSON(t)
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(base, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	model := func(m map[string]any) map[string]any { return m["model"].(map[string]any) }
	split := func(m map[string]any) map[string]any {
		return m["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)
	}
	added0 := func(m map[string]any) map[string]any { return m["added_tokens"].([]any)[0].(map[string]any) }
	cases := []struct {
		name, want string
		data       []byte
	}{
		{"not json", "json", []byte("{")},
		{"bad gzip", "gzip", []byte{0x1f, 0x8b, 0, 1, 2}},
		{"unknown regex", "unknown Split regex", edit(func(m map[string]any) {
			split(m)["pattern"] = map[string]any{"Regex": `\w+|\s+`}
		})},
		{"string pattern", "not a regex", edit(func(m map[string]any) { split(m)["pattern"] = map[string]any{"String": " "} })},
		{"normalizer", "normalizer", edit(func(m map[string]any) { m["normalizer"] = map[string]any{"type": "NFKC"} })},
		{"no pre-tokenizer", "pre_tokenizer", edit(func(m map[string]any) { m["pre_tokenizer"] = nil })},
		{"decoder", "decoder", edit(func(m map[string]any) { m["decoder"] = map[string]any{"type": "WordPiece"} })},
		{"model type", "want BPE", edit(func(m map[string]any) { model(m)["type"] = "Unigram" })},
		{"missing byte", "not in the vocabulary", edit(func(m map[string]any) { delete(model(m)["vocab"].(map[string]any), "Ġ") })},
		{"bad merge", "merge 0", edit(func(m map[string]any) { model(m)["merges"].([]any)[0] = []any{"Ġ", "nope"} })},
		{"merge format", "merges", edit(func(m map[string]any) { model(m)["merges"] = 7 })},
		{"duplicate id", "used by both", edit(func(m map[string]any) { model(m)["vocab"].(map[string]any)["zzzq"] = 5 })},
		{"negative id", "out of range", edit(func(m map[string]any) { model(m)["vocab"].(map[string]any)["zzzq"] = -1 })},
		{"empty added", "empty content", edit(func(m map[string]any) { added0(m)["content"] = "" })},
		{"lstrip", "unsupported", edit(func(m map[string]any) { added0(m)["lstrip"] = true })},
		{"huge added id", "out of range", edit(func(m map[string]any) { added0(m)["id"] = 1 << 30 })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk, err := tokenizer.Parse(c.data)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse = %v, %v; want an error containing %q", tk, err, c.want)
			}
		})
	}
	if _, err := tokenizer.Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

func TestParseGzipAndMergeFormats(t *testing.T) {
	data := tinyJSON(t)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	// The older merge format: "a b" strings.
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	mod := m["model"].(map[string]any)
	for i, p := range mod["merges"].([]any) {
		pair := p.([]any)
		mod["merges"].([]any)[i] = pair[0].(string) + " " + pair[1].(string)
	}
	old, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	text := "Hello, wörld! <|im_start|>user\n123 ünïcödé 👍🏽"
	plain := load(t, "qwen36-tiny").Encode(text)
	for name, d := range map[string][]byte{"gzip": gz.Bytes(), "string merges": old} {
		tk, err := tokenizer.Parse(d)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := tk.Encode(text); !slices.Equal(got, plain) {
			t.Errorf("%s: Encode = %v, plain file gives %v", name, got, plain)
		}
	}
}

func TestAccessors(t *testing.T) {
	data := tinyJSON(t)
	tk := load(t, "qwen36-tiny")
	added := fileAddedTokens(t, data)
	var vocab struct {
		Model struct{ Vocab map[string]int32 } `json:"model"`
	}
	if err := json.Unmarshal(data, &vocab); err != nil {
		t.Fatal(err)
	}
	highest := int32(0)
	for tok, id := range vocab.Model.Vocab {
		highest = max(highest, id)
		if got, ok := tk.TokenID(tok); !ok || got != id {
			t.Fatalf("TokenID(%q) = %d, %v; file says %d", tok, got, ok, id)
		}
		if got, ok := tk.Token(id); !ok || got != tok {
			t.Fatalf("Token(%d) = %q, %v; file says %q", id, got, ok, tok)
		}
		if tk.IsSpecial(id) {
			t.Fatalf("IsSpecial(%d) for a base token", id)
		}
	}
	nSpecial := 0
	for _, a := range added {
		highest = max(highest, a.ID)
		if got, ok := tk.TokenID(a.Content); !ok || got != a.ID {
			t.Errorf("TokenID(%q) = %d, %v; file says %d", a.Content, got, ok, a.ID)
		}
		if got, ok := tk.Token(a.ID); !ok || got != a.Content {
			t.Errorf("Token(%d) = %q, %v; file says %q", a.ID, got, ok, a.Content)
		}
		if tk.IsSpecial(a.ID) != a.Special {
			t.Errorf("IsSpecial(%d %q) = %v; file says %v", a.ID, a.Content, !a.Special, a.Special)
		}
		// Every added token is matched whole, special or not.
		if got := tk.Encode("x" + a.Content + "x"); len(got) != 3 || got[1] != a.ID {
			t.Errorf("Encode(x%sx) = %v; want the added token %d in the middle", a.Content, got, a.ID)
		}
		if a.Special {
			nSpecial++
		}
	}
	if nSpecial == 0 || nSpecial == len(added) {
		t.Fatalf("fixture should mix special and non-special added tokens (%d of %d special)", nSpecial, len(added))
	}
	if tk.VocabSize() != int(highest)+1 {
		t.Errorf("VocabSize = %d; want %d", tk.VocabSize(), highest+1)
	}
	for _, id := range []int32{-1, int32(tk.VocabSize()), 1 << 30} {
		if _, ok := tk.Token(id); ok {
			t.Errorf("Token(%d) ok", id)
		}
		if tk.IsSpecial(id) {
			t.Errorf("IsSpecial(%d)", id)
		}
	}
	if _, ok := tk.TokenID("no such token, surely"); ok {
		t.Error("TokenID of an unknown token ok")
	}
}

// TestDecodeBadIDs: a negative id is an error; an id no token has (the model's padded rows) decodes as
// nothing, in Decode and in the stream decoder, as Hugging Face decodes it.
func TestDecodeBadIDs(t *testing.T) {
	tk := load(t, "qwen36-tiny")
	if s, err := tk.Decode([]int32{72, -1}, false); !errors.Is(err, tokenizer.ErrUnknownID) {
		t.Errorf("Decode with id -1 = %q, %v; want ErrUnknownID", s, err)
	}
	if _, err := tk.NewDecoder(false).Add(-1); !errors.Is(err, tokenizer.ErrUnknownID) {
		t.Errorf("Add(-1): %v; want ErrUnknownID", err)
	}
	want, err := tk.Decode([]int32{72, 72}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int32{int32(tk.VocabSize()), int32(tk.VocabSize()) + 60, 1 << 30} {
		if s, err := tk.Decode([]int32{72, id, 72}, false); err != nil || s != want {
			t.Errorf("Decode with id %d = %q, %v; want %q", id, s, err, want)
		}
		d := tk.NewDecoder(false)
		if s, err := d.Add(id); err != nil || s != "" {
			t.Errorf("Add(%d) = %q, %v; want empty", id, s, err)
		}
		if b := tk.TokenBytes(id); b != nil {
			t.Errorf("TokenBytes(%d) = %q", id, b)
		}
	}
}

// TestStreamHoldsSplitCharacters feeds a multi-byte character one byte token at a time.
func TestStreamHoldsSplitCharacters(t *testing.T) {
	tk := load(t, "qwen36-tiny")
	byteID := func(b byte) int32 { // the base token of one byte, named in the byte-level alphabet
		id, ok := tk.TokenID(string(gpt2Rune(b)))
		if !ok {
			t.Fatalf("no token for byte %x", b)
		}
		return id
	}
	euro := []byte("€") // e2 82 ac
	d := tk.NewDecoder(false)
	for i, b := range euro {
		s, err := d.Add(byteID(b))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: "€", false: ""}[i == len(euro)-1]; s != want {
			t.Fatalf("after byte %d: %q; want %q", i, s, want)
		}
	}
	// A cut-short character comes out as one U+FFFD on Flush, and the decoder is reusable.
	d.Add(byteID(0xe2))
	d.Add(byteID(0x82))
	if s := d.Flush(); s != "\uFFFD" {
		t.Fatalf("Flush = %q", s)
	}
	if s, _ := d.Add(byteID('A')); s != "A" {
		t.Fatalf("after Flush: %q", s)
	}
}

func TestConcurrentEncode(t *testing.T) {
	tk := load(t, "qwen3")
	texts := []string{mixedText(20000), "<|im_start|>user\nHello<|im_end|>", mixedText(5000)}
	want := make([][]int32, len(texts))
	for i, s := range texts {
		want[i] = tk.Encode(s)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i, s := range texts {
				if got := tk.Encode(s); !slices.Equal(got, want[i]) {
					t.Errorf("goroutine %d: Encode of text %d differs", g, i)
				}
			}
		})
	}
	wg.Wait()
}

// gpt2Rune is GPT-2's byte→character map as model.md §5 states it: printable bytes stand for
// themselves, the other 68 map in order to U+0100, U+0101, ….
func gpt2Rune(b byte) rune {
	self := func(c int) bool { return c >= 0x21 && c <= 0x7e || c >= 0xa1 && c <= 0xac || c >= 0xae }
	if self(int(b)) {
		return rune(b)
	}
	n := 0
	for c := 0; c < int(b); c++ {
		if !self(c) {
			n++
		}
	}
	return rune(0x100 + n)
}

// TestIgnoreMerges checks the ignore_merges option: a pre-token found whole in the vocabulary is one token
// even when no merges lead to it.
func TestIgnoreMerges(t *testing.T) {
	var m map[string]any
	if err := json.Unmarshal(tinyJSON(t), &m); err != nil {
		t.Fatal(err)
	}
	mod := m["model"].(map[string]any)
	const word = "Ġzqxjv" // " zqxjv" in the byte-level alphabet; no merge makes it
	vocab := mod["vocab"].(map[string]any)
	newID := len(vocab) + 1000
	vocab[word] = newID
	for _, ignore := range []bool{false, true} {
		mod["ignore_merges"] = ignore
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		tk, err := tokenizer.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		got := tk.Encode(" zqxjv")
		if whole := len(got) == 1 && got[0] == int32(newID); whole != ignore {
			t.Errorf("ignore_merges %v: Encode = %v", ignore, got)
		}
	}
}
