package chat

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRoundTrip renders an assistant turn, takes the text the model would have generated after
// the generation prompt, parses it, and checks that the structured message comes back.
func TestRoundTrip(t *testing.T) {
	const user = `{"role":"user","content":"Weather in Paris and Rome?"}`
	cases := []struct {
		name      string
		thinking  bool
		assistant string
		want      parsed
	}{
		{"reasoning, content and calls", true,
			`{"role":"assistant","reasoning_content":"Two cities.\nCall twice.","content":"Checking both.",
			  "tool_calls":[{"type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"days\": 2, \"ratio\": 1.5, \"opts\": {\"u\": [1, \"c\"]}, \"metric\": false, \"tags\": [], \"none\": null, \"either\": \"x\"}"}},
			                {"type":"function","function":{"name":"get_weather","arguments":{"city":"Rome\nItaly","days":-3}}},
			                {"type":"function","function":{"name":"ping","arguments":{}}}]}`,
			parsed{Reasoning: "Two cities.\nCall twice.", Content: "Checking both.", Calls: []parsedCall{
				{"get_weather", `{"city": "Paris", "days": 2, "ratio": 1.5, "opts": {"u": [1, "c"]}, "metric": false, "tags": [], "none": null, "either": "x"}`},
				{"get_weather", `{"city": "Rome\nItaly", "days": -3}`},
				{"ping", `{}`}}}},
		{"calls only", true,
			`{"role":"assistant","reasoning_content":"Just call.","content":"","tool_calls":[{"function":{"name":"ping","arguments":{}}}]}`,
			parsed{Reasoning: "Just call.", Calls: []parsedCall{{"ping", `{}`}}}},
		{"content only", true,
			`{"role":"assistant","content":"<think>\nHmm.\n</think>\n\nIt is sunny.\n\nBoth cities."}`,
			parsed{Reasoning: "Hmm.", Content: "It is sunny.\n\nBoth cities."}},
		{"thinking off", false,
			`{"role":"assistant","content":"Sure.","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Nice","any":[1,{"a":"b"}]}}}]}`,
			parsed{Content: "Sure.", Calls: []parsedCall{{"get_weather", `{"city": "Nice", "any": [1, {"a": "b"}]}`}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			enable := c.thinking
			prompt, err := Render(json.RawMessage("["+user+"]"), json.RawMessage(testTools),
				Options{AddGenerationPrompt: true, EnableThinking: &enable})
			if err != nil {
				t.Fatal(err)
			}
			full, err := Render(json.RawMessage("["+user+","+c.assistant+"]"), json.RawMessage(testTools), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(full, prompt) || !strings.HasSuffix(full, "<|im_end|>\n") {
				t.Fatalf("rendered turn does not continue the prompt:\nprompt %q\nfull   %q", prompt, full)
			}
			generated := strings.TrimSuffix(full[len(prompt):], "<|im_end|>\n")
			got := parseChunks(t, testTools, c.thinking, []string{generated})
			if !equalParsed(got, c.want) {
				t.Fatalf("generated %q\nparsed %+v\nwant   %+v", generated, got, c.want)
			}
			// And back: the parsed message renders to the same text.
			msg := map[string]any{"role": "assistant", "content": got.Content, "reasoning_content": got.Reasoning}
			var calls []map[string]any
			for _, tc := range got.Calls {
				calls = append(calls, map[string]any{"type": "function",
					"function": map[string]any{"name": tc.Name, "arguments": tc.Args}})
			}
			if calls != nil {
				msg["tool_calls"] = calls
			}
			m, err := json.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Render(json.RawMessage("["+user+","+string(m)+"]"), json.RawMessage(testTools), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if again != full {
				t.Errorf("re-rendered parsed message differs:\n got %q\nwant %q", again, full)
			}
		})
	}
}
