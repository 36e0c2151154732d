package tokenizer_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lily-engine/lily/fixtures"
	"github.com/lily-engine/lily/internal/tokenizer"
)

// TestRequireAdded: a tokenizer.json whose added tokens were dropped is refused by name.
func TestRequireAdded(t *testing.T) {
	tk, err := tokenizer.Parse(fixtures.TinyTokenizerJSON)
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.RequireAdded(tokenizer.ChatTokens...); err != nil {
		t.Fatalf("the fixture: %v", err)
	}
	var f map[string]any
	if err := json.Unmarshal(fixtures.TinyTokenizerJSON, &f); err != nil {
		t.Fatal(err)
	}
	f["added_tokens"] = []any{}
	stripped, _ := json.Marshal(f)
	tk, err = tokenizer.Parse(stripped)
	if err != nil {
		t.Fatal(err)
	}
	err = tk.RequireAdded(tokenizer.ChatTokens...)
	if err == nil || !strings.Contains(err.Error(), "<|im_start|>, <|im_end|>") || !strings.Contains(err.Error(), "<|endoftext|>") {
		t.Fatalf("stripped: %v", err)
	}
}
