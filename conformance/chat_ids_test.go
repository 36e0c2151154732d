package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lily-engine/lily/internal/chat"
	"github.com/lily-engine/lily/internal/tokenizer"
)

// chatGolden is one fixtures/chat/goldens case (rendered by Jinja2 in transformers' environment).
type chatGolden struct {
	Name     string  `json:"name"`
	Messages string  `json:"messages"`
	Tools    *string `json:"tools"`
	Options  struct {
		AddGenerationPrompt bool                       `json:"add_generation_prompt"`
		EnableThinking      *bool                      `json:"enable_thinking"`
		PreserveThinking    *bool                      `json:"preserve_thinking"`
		Extra               map[string]json.RawMessage `json:"extra"`
	} `json:"options"`
	Expected *string `json:"expected"`
}

// TestChatPromptIDs checks the prompt ids lily builds from chat messages — Go renderer, then Go
// tokenizer — against Jinja2's rendering encoded by Hugging Face tokenizers, for every golden
// conversation that renders.
func TestChatPromptIDs(t *testing.T) {
	var want struct {
		Cases map[string][]int32 `json:"cases"`
	}
	b, err := os.ReadFile("../fixtures/chat/golden-ids-qwen36-tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.Load("../fixtures/tokenizer/qwen36-tiny/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../fixtures/chat/goldens/*.json")
	if err != nil || len(files) < 40 {
		t.Fatalf("chat goldens: %d files, %v", len(files), err)
	}
	checked := 0
	for _, f := range files {
		var g chatGolden
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if g.Expected == nil {
			continue
		}
		var tools json.RawMessage
		if g.Tools != nil {
			tools = json.RawMessage(*g.Tools)
		}
		text, err := chat.Render(json.RawMessage(g.Messages), tools, chat.Options{
			AddGenerationPrompt: g.Options.AddGenerationPrompt, EnableThinking: g.Options.EnableThinking,
			PreserveThinking: g.Options.PreserveThinking, Extra: g.Options.Extra})
		if err != nil {
			t.Errorf("%s: %v", g.Name, err)
			continue
		}
		ids, ok := want.Cases[g.Name]
		if !ok {
			t.Errorf("%s: no reference ids (rerun fixtures/gen/chat_ids.mjs)", g.Name)
			continue
		}
		if got := tk.Encode(text); !slices.Equal(got, ids) {
			t.Errorf("%s: ids differ from the reference\n got %v\nwant %v", g.Name, got, ids)
		}
		checked++
	}
	if checked < 40 {
		t.Fatalf("only %d conversations checked", checked)
	}
}
