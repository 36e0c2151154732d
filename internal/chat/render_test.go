package chat

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldenDir holds the conversations rendered by fixtures/gen/chat_goldens.py with jinja2.
const goldenDir = "../../fixtures/chat/goldens"

type golden struct {
	Name     string  `json:"name"`
	Messages string  `json:"messages"`
	Tools    *string `json:"tools"`
	Options  struct {
		AddGenerationPrompt bool                       `json:"add_generation_prompt"`
		EnableThinking      *bool                      `json:"enable_thinking"`
		PreserveThinking    *bool                      `json:"preserve_thinking"`
		Extra               map[string]json.RawMessage `json:"extra"`
	} `json:"options"`
	Expected  *string `json:"expected"`
	Error     string  `json:"error"`
	ErrorType string  `json:"error_type"`
}

func loadGoldens(t *testing.T) []golden {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("found %d goldens in %s, want at least 40", len(files), goldenDir)
	}
	var out []golden
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var g golden
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if (g.Expected == nil) == (g.Error == "") {
			t.Fatalf("%s: want exactly one of expected and error", f)
		}
		out = append(out, g)
	}
	return out
}

func (g golden) render() (string, error) {
	var tools json.RawMessage
	if g.Tools != nil {
		tools = json.RawMessage(*g.Tools)
	}
	return Render(json.RawMessage(g.Messages), tools, Options{
		AddGenerationPrompt: g.Options.AddGenerationPrompt,
		EnableThinking:      g.Options.EnableThinking,
		PreserveThinking:    g.Options.PreserveThinking,
		Extra:               g.Options.Extra,
	})
}

func TestRenderGoldens(t *testing.T) {
	for _, g := range loadGoldens(t) {
		t.Run(g.Name, func(t *testing.T) {
			got, err := g.render()
			if g.Expected != nil {
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				if got != *g.Expected {
					t.Errorf("mismatch at byte %d\n got: %q\nwant: %q", firstDiff(got, *g.Expected), got, *g.Expected)
				}
				return
			}
			if err == nil {
				t.Fatalf("Render succeeded, want error %q", g.Error)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			var te *TemplateError
			if g.ErrorType == "TemplateError" {
				if !errors.As(err, &te) || te.Message != g.Error {
					t.Errorf("error %v, want TemplateError %q", err, g.Error)
				}
			} else if errors.As(err, &te) {
				t.Errorf("error %v is a TemplateError; the template fails with %s %q instead", err, g.ErrorType, g.Error)
			}
		})
	}
}

func firstDiff(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestRenderInputErrors(t *testing.T) {
	for _, c := range []struct{ name, messages, tools, want string }{
		{"messages not JSON", `[{"role":`, "", "messages"},
		{"messages an object", `{"role":"user"}`, "", "want an array"},
		{"message a string", `["hi"]`, "", "messages[0]"},
		{"tools an object", `[{"role":"user","content":"x"}]`, `{"name":"f"}`, "tools"},
		{"tools trailing data", `[{"role":"user","content":"x"}]`, `[] []`, "tools"},
		{"arguments bad string", `[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{oops"}}]}]`, "", "arguments"},
		{"arguments string not object", `[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"[1]"}}]}]`, "", "arguments"},
		{"tool call without name", `[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"function":{"arguments":{}}}]}]`, "", "name"},
		{"tool_calls a string", `[{"role":"user","content":"x"},{"role":"assistant","tool_calls":"f()"}]`, "", "tool_calls"},
		{"part a number", `[{"role":"user","content":[1]}]`, "", "content part"},
		{"text an object", `[{"role":"user","content":[{"text":{"a":1}}]}]`, "", "content part text"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Render(json.RawMessage(c.messages), json.RawMessage(c.tools), Options{})
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want an ErrInvalid mentioning %q", err, c.want)
			}
		})
	}
}

func TestRenderOptionsOverrideExtra(t *testing.T) {
	on := true
	got, err := Render(json.RawMessage(`[{"role":"user","content":"Hi"}]`), nil, Options{
		AddGenerationPrompt: true, EnableThinking: &on,
		Extra: map[string]json.RawMessage{"enable_thinking": json.RawMessage("false")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
