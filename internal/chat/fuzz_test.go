package chat

import (
	"encoding/json"
	"testing"
)

// FuzzParserSplit checks that the parser never panics, always closes tool-call arguments as valid
// JSON, and gives the same result however the input is cut into chunks (the cuts come from the
// fuzzer's second input, one byte per chunk length).
func FuzzParserSplit(f *testing.F) {
	for _, c := range parserCases {
		f.Add(c.in, []byte{1, 5, 2, 9}, c.thinking)
	}
	f.Add("<tool_call>\n<function=get_weather>\n<parameter=city>\nX\n</parameter>\n</function>\n</tool_call>", []byte{3, 7, 11}, false)
	f.Fuzz(func(t *testing.T, in string, cuts []byte, thinking bool) {
		whole := parseChunks(t, testTools, thinking, []string{in})
		var chunks []string
		rest := in
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if len(cuts) > 0 {
				n = min(n, int(cuts[i%len(cuts)])%8)
			}
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
			if i > 4*len(in)+8 { // cuts of zero length only: finish in one piece
				chunks = append(chunks, rest)
				break
			}
		}
		if got := parseChunks(t, testTools, thinking, chunks); !sameParsed(got, whole) {
			t.Fatalf("chunks %q: got %+v, want %+v", chunks, got, whole)
		}
		for _, c := range whole.Calls {
			if !json.Valid([]byte(c.Args)) {
				t.Fatalf("arguments %q", c.Args)
			}
		}
	})
}

// FuzzRender checks that Render never panics on arbitrary messages and tools.
func FuzzRender(f *testing.F) {
	f.Add(`[{"role":"user","content":"hi"}]`, `[]`)
	f.Add(`[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":"<think>x</think>y","tool_calls":[{"function":{"name":"f","arguments":"{\"a\":1e400}"}}]},{"role":"tool","content":"r"}]`, `[{"name":"f","parameters":{"a":-0.0}}]`)
	f.Fuzz(func(t *testing.T, messages, tools string) {
		_, _ = Render(json.RawMessage(messages), json.RawMessage(tools), Options{AddGenerationPrompt: true})
	})
}
