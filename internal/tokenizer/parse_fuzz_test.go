package tokenizer_test

import (
	"encoding/json"
	"testing"

	"github.com/lily-engine/lily/internal/tokenizer"
)

// minimalJSON builds a small valid tokenizer.json: the 256 byte tokens, one merge ("Ġ" "a" → "Ġa"), one
// added token, the Qwen3.6 pattern and the given normalizer.
func minimalJSON(t testing.TB, normalizer any) []byte {
	t.Helper()
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(gpt2Rune(byte(b)))] = b
	}
	vocab["Ġa"] = 256
	f := map[string]any{
		"added_tokens": []any{map[string]any{"id": 257, "content": "<|x|>", "special": true},
			map[string]any{"id": 258, "content": "e\u0301!", "normalized": true},
			map[string]any{"id": 300, "content": "<|y|>"}}, // ids 259..299 have no token
		"normalizer": normalizer,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "behavior": "Isolated", "invert": false, "pattern": map[string]any{
				"Regex": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`}},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		}},
		"decoder": map[string]any{"type": "ByteLevel"},
		"model":   map[string]any{"type": "BPE", "vocab": vocab, "merges": []any{[]any{"Ġ", "a"}}},
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNoNormalizer checks that a file without a normalizer leaves text as it is.
func TestNoNormalizer(t *testing.T) {
	for _, c := range []struct {
		normalizer any
		want       string
	}{{nil, "e\u0301 a<|x|>"}, {map[string]any{"type": "NFC"}, "\u00e9 a<|x|>"}} {
		tk, err := tokenizer.Parse(minimalJSON(t, c.normalizer))
		if err != nil {
			t.Fatal(err)
		}
		ids := tk.Encode("e\u0301 a<|x|>")
		if got, err := tk.Decode(ids, false); err != nil || got != c.want {
			t.Errorf("normalizer %v: round trip %+q, %v; want %+q", c.normalizer, got, err, c.want)
		}
		if n := len(ids); ids[n-1] != 257 || ids[n-2] != 256 {
			t.Errorf("normalizer %v: ids %v; want the merge 256 and the added token 257 at the end", c.normalizer, ids)
		}
	}
}

// TestNormalizedAddedToken checks an added token with normalized: true: it is matched in the normalized
// text, in its normalized form, so both spellings of "é!" find it.
func TestNormalizedAddedToken(t *testing.T) {
	tk, err := tokenizer.Parse(minimalJSON(t, map[string]any{"type": "NFC"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a\u00e9!", "ae\u0301!"} {
		if ids := tk.Encode(s); len(ids) != 2 || ids[1] != 258 {
			t.Errorf("Encode(%+q) = %v; want the added token 258 last", s, ids)
		}
	}
}

// TestIDHoles checks ids below VocabSize that no token has.
func TestIDHoles(t *testing.T) {
	tk, err := tokenizer.Parse(minimalJSON(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if tk.VocabSize() != 301 {
		t.Fatalf("VocabSize = %d; want 301", tk.VocabSize())
	}
	if tok, ok := tk.Token(280); ok {
		t.Errorf("Token(280) = %q, true", tok)
	}
	if s, err := tk.Decode([]int32{97, 280}, false); err != nil || s != "a" {
		t.Errorf("Decode of a hole = %q, %v; want \"a\"", s, err)
	}
	if s, err := tk.Decode([]int32{97, 300}, true); err != nil || s != "a<|y|>" {
		t.Errorf("Decode([97 300]) = %q, %v", s, err)
	}
}

// FuzzParse feeds mutated tokenizer files to Parse: any input gives a tokenizer or an error, never a
// panic, and a tokenizer that loads can encode and decode.
func FuzzParse(f *testing.F) {
	f.Add(minimalJSON(f, map[string]any{"type": "NFC"}))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":-7}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := tokenizer.Parse(data)
		if err != nil {
			return
		}
		ids := tk.Encode("Hello, wörld 'S <|x|>\xff")
		if _, err := tk.Decode(ids, true); err != nil {
			t.Fatalf("Decode of Encode's ids: %v", err)
		}
	})
}
