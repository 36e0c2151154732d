package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// parsed is the whole of a parser's output, for comparing runs.
type parsed struct {
	Reasoning, Content string
	Calls              []parsedCall
}

type parsedCall struct{ Name, Args string }

// collect appends deltas to r, checking the streaming contract: one field per delta, call
// indices in order, the name on (and only on) a call's first delta.
func (r *parsed) collect(t testing.TB, ds []Delta) {
	t.Helper()
	for _, d := range ds {
		set := 0
		for _, b := range []bool{d.Reasoning != "", d.Content != "", d.ToolCall != nil} {
			if b {
				set++
			}
		}
		if set != 1 {
			t.Fatalf("delta %+v sets %d fields, want 1", d, set)
		}
		r.Reasoning += d.Reasoning
		r.Content += d.Content
		if tc := d.ToolCall; tc != nil {
			switch {
			case tc.Index == len(r.Calls) && tc.Name != "":
				r.Calls = append(r.Calls, parsedCall{Name: tc.Name, Args: tc.Arguments})
			case tc.Index == len(r.Calls)-1 && tc.Name == "":
				r.Calls[tc.Index].Args += tc.Arguments
			default:
				t.Fatalf("tool delta %+v out of order after %d calls", *tc, len(r.Calls))
			}
		}
	}
}

// parseChunks runs a parser over chunks and returns its output.
func parseChunks(t testing.TB, tools string, thinking bool, chunks []string) parsed {
	t.Helper()
	p, err := NewParser(json.RawMessage(tools), thinking)
	if err != nil {
		t.Fatal(err)
	}
	var r parsed
	for _, c := range chunks {
		r.collect(t, p.Add(c))
	}
	r.collect(t, p.Finish())
	for i, c := range r.Calls {
		if !json.Valid([]byte(c.Args)) {
			t.Fatalf("call %d arguments %q are not valid JSON", i, c.Args)
		}
	}
	return r
}

const testTools = `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{
 "city":{"type":"string"},"days":{"type":"integer"},"ratio":{"type":"number"},"metric":{"type":"boolean"},
 "opts":{"type":"object"},"tags":{"type":"array"},"none":{"type":"null"},"either":{"type":["integer","string"]},
 "any":{}}}}},
 {"name":"ping","parameters":{"type":"object","properties":{}}}]`

var parserCases = []struct {
	name     string
	thinking bool
	in       string
	want     parsed
}{
	{"reasoning then content", true, "Let me think.\nStep 2.\n</think>\n\nHello!\n",
		parsed{Reasoning: "Let me think.\nStep 2.", Content: "Hello!"}},
	{"thinking off", false, "\n\nJust content <b>bold</b> and < less", parsed{Content: "Just content <b>bold</b> and < less"}},
	{"repeated think tag", true, "<think>\nx\n</think>y", parsed{Reasoning: "x", Content: "y"}},
	{"no end of thinking", true, "still thinking </thi", parsed{Reasoning: "still thinking </thi"}},
	{"tool call", true, "Need weather.\n</think>\n\nChecking.\n\n<tool_call>\n<function=get_weather>\n" +
		"<parameter=city>\nSão Paulo\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
		parsed{Reasoning: "Need weather.", Content: "Checking.",
			Calls: []parsedCall{{"get_weather", `{"city": "São Paulo", "days": 3}`}}}},
	{"typed values", false, "<tool_call>\n<function=get_weather>\n" +
		"<parameter=ratio>\n0.25\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n" +
		"<parameter=opts>\n{\"a\": [1, 2], \"b\": {\"c\": null}}\n</parameter>\n<parameter=tags>\n[\"x\", \"y\"]\n</parameter>\n" +
		"<parameter=none>\nnull\n</parameter>\n<parameter=either>\n12\n</parameter>\n<parameter=any>\n{\"k\": 1}\n</parameter>\n" +
		"<parameter=extra>\nplain words\n</parameter>\n<parameter=city>\n42\n</parameter>\n</function>\n</tool_call>",
		parsed{Calls: []parsedCall{{"get_weather", `{"ratio": 0.25, "metric": true, "opts": {"a":[1,2],"b":{"c":null}}, ` +
			`"tags": ["x","y"], "none": null, "either": 12, "any": {"k":1}, "extra": "plain words", "city": "42"}`}}}},
	{"bad typed values fall back to strings", false, "<tool_call>\n<function=get_weather>\n" +
		"<parameter=days>\nthree\n</parameter>\n<parameter=ratio>\n1.5x\n</parameter>\n<parameter=metric>\nyes\n</parameter>\n" +
		"<parameter=opts>\n{broken\n</parameter>\n<parameter=tags>\n{\"not\": \"array\"}\n</parameter>\n" +
		"<parameter=either>\nmany\n</parameter>\n<parameter=days>\n2.5\n</parameter>\n</function>\n</tool_call>",
		parsed{Calls: []parsedCall{{"get_weather", `{"days": "three", "ratio": "1.5x", "metric": "yes", "opts": "{broken", ` +
			`"tags": "{\"not\": \"array\"}", "either": "many", "days": "2.5"}`}}}},
	{"multi-line string value", false, "<tool_call>\n<function=get_weather>\n<parameter=city>\n\nline1\nline2\n\n</parameter>\n</function>\n</tool_call>",
		parsed{Calls: []parsedCall{{"get_weather", `{"city": "\nline1\nline2\n"}`}}}},
	{"two calls", false, "<tool_call>\n<function=ping>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n" +
		"<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>",
		parsed{Calls: []parsedCall{{"ping", `{}`}, {"get_weather", `{"city": "Oslo"}`}}}},
	{"unknown function is content", false, "Hi\n\n<tool_call>\n<function=nope>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>\nBye",
		parsed{Content: "Hi\n\n<tool_call>\n<function=nope>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>\nBye"}},
	{"tool call without function tag is content", false, "<tool_call>\n{\"name\": \"ping\"}\n</tool_call>",
		parsed{Content: "<tool_call>\n{\"name\": \"ping\"}\n</tool_call>"}},
	{"function name with newline is content", false, "<tool_call>\n<function=pi\nng>\n</function></tool_call>",
		parsed{Content: "<tool_call>\n<function=pi\nng>\n</function></tool_call>"}},
	{"unclosed tool call before name", false, "Text <tool_call>\n<function=get_wea",
		parsed{Content: "Text <tool_call>\n<function=get_wea"}},
	{"unclosed value", false, "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar",
		parsed{Calls: []parsedCall{{"get_weather", `{"city": "Par"}`}}}},
	{"missing </parameter>", false, "<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</function>\n</tool_call>",
		parsed{Calls: []parsedCall{{"get_weather", `{"days": 3}`}}}},
	{"unclosed parameter name", false, "<tool_call>\n<function=get_weather>\n<parameter=ci",
		parsed{Calls: []parsedCall{{"get_weather", `{}`}}}},
	{"missing </function>", false, "<tool_call>\n<function=ping>\n</tool_call>after",
		parsed{Calls: []parsedCall{{"ping", `{}`}}, Content: "after"}},
	{"missing </tool_call>", false, "<tool_call>\n<function=ping>\n</function>\nafter",
		parsed{Calls: []parsedCall{{"ping", `{}`}}, Content: "after"}},
	{"garbage inside function is dropped", false, "<tool_call>\n<function=get_weather>\njunk <b> <parameter=bad\nname>\n" +
		"<parameter=city>\nX\n</parameter>\nmore junk\n</function>\n</tool_call>",
		parsed{Calls: []parsedCall{{"get_weather", `{"city": "X"}`}}}},
	{"text after a call", false, "A\n<tool_call>\n<function=ping>\n</function>\n</tool_call>\n\nB\n",
		parsed{Content: "A\n\nB", Calls: []parsedCall{{"ping", `{}`}}}},
	{"unicode white space and split runes", true, "\u3000 reason\u00a0\u2003</think>\u3000\u3000日本\u3000", parsed{Reasoning: "reason", Content: "日本"}},
	{"tool call inside reasoning stays reasoning", true, "<tool_call>x</tool_call></think>done",
		parsed{Reasoning: "<tool_call>x</tool_call>", Content: "done"}},
	{"empty", true, "", parsed{}},
	{"only white space", false, " \n\t ", parsed{}},
}

func TestParser(t *testing.T) {
	for _, c := range parserCases {
		t.Run(c.name, func(t *testing.T) {
			got := parseChunks(t, testTools, c.thinking, []string{c.in})
			if !equalParsed(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// equalParsed compares outputs; arguments compare as Python would print them.
func equalParsed(a, b parsed) bool {
	if a.Reasoning != b.Reasoning || a.Content != b.Content || len(a.Calls) != len(b.Calls) {
		return false
	}
	for i := range a.Calls {
		if a.Calls[i].Name != b.Calls[i].Name || normJSON(a.Calls[i].Args) != normJSON(b.Calls[i].Args) {
			return false
		}
	}
	return true
}

func normJSON(s string) string {
	v, err := decodeValue([]byte(s))
	if err != nil {
		return "invalid JSON: " + s
	}
	out, err := dumpString(v)
	if err != nil {
		return "undumpable: " + s
	}
	return out
}

// TestParserEverySplit feeds each case split at every byte into two chunks, and byte by byte.
func TestParserEverySplit(t *testing.T) {
	for _, c := range parserCases {
		whole := parseChunks(t, testTools, c.thinking, []string{c.in})
		for i := 0; i <= len(c.in); i++ {
			got := parseChunks(t, testTools, c.thinking, []string{c.in[:i], c.in[i:]})
			if !sameParsed(got, whole) {
				t.Fatalf("%s: split at %d: got %+v, want %+v", c.name, i, got, whole)
			}
		}
		var bytes []string
		for i := range len(c.in) {
			bytes = append(bytes, c.in[i:i+1])
		}
		if got := parseChunks(t, testTools, c.thinking, bytes); !sameParsed(got, whole) {
			t.Fatalf("%s: byte by byte: got %+v, want %+v", c.name, got, whole)
		}
	}
}

// sameParsed is exact equality, arguments included byte for byte.
func sameParsed(a, b parsed) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestParserHoldsBackTags checks that no delta carries part of a tag: fed byte by byte, text
// without '<' of its own never shows one.
func TestParserHoldsBackTags(t *testing.T) {
	in := "Plan it.\n</think>\n\nSure.\n<tool_call>\n<function=ping>\n</function>\n</tool_call>"
	p, err := NewParser(json.RawMessage(testTools), true)
	if err != nil {
		t.Fatal(err)
	}
	var ds []Delta
	for i := range len(in) {
		ds = append(ds, p.Add(in[i:i+1])...)
	}
	ds = append(ds, p.Finish()...)
	for _, d := range ds {
		if strings.ContainsAny(d.Reasoning+d.Content, "<>") {
			t.Errorf("delta %+v carries tag text", d)
		}
	}
}

// TestParserStreamsArguments checks that the name comes before the call ends and each
// parameter's fragment as soon as its </parameter> arrives.
func TestParserStreamsArguments(t *testing.T) {
	p, err := NewParser(json.RawMessage(testTools), false)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct{ chunk, want string }{
		{"<tool_call>\n<function=get_weather", ""},
		{">\n", "name get_weather"},
		{"<parameter=city>\nRome\n</param", ""},
		{"eter>\n", `args {"city": "Rome"`},
		{"<parameter=days>\n2\n</parameter>\n", `args , "days": 2`},
		{"</function>\n</tool_call>", "args }"},
	}
	for _, s := range steps {
		var got []string
		for _, d := range p.Add(s.chunk) {
			if d.ToolCall.Name != "" {
				got = append(got, "name "+d.ToolCall.Name+d.ToolCall.Arguments)
			} else {
				got = append(got, "args "+d.ToolCall.Arguments)
			}
		}
		if strings.Join(got, "|") != s.want {
			t.Fatalf("after %q: got %q, want %q", s.chunk, got, s.want)
		}
	}
	if ds := p.Finish(); len(ds) != 0 {
		t.Errorf("Finish: %+v, want nothing", ds)
	}
}

func TestNewParserBadTools(t *testing.T) {
	for _, tools := range []string{`{`, `{"name":"f"}`, `"f"`, `[1] 2`} {
		if _, err := NewParser(json.RawMessage(tools), true); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewParser(%s): err = %v, want ErrInvalid", tools, err)
		}
	}
	// Entries that cannot be called are skipped: a call to them is content.
	in := "<tool_call>\n<function=f>\n</function>\n</tool_call>"
	got := parseChunks(t, `[1, {"function": 2}, {"name": 3}, null]`, false, []string{in})
	if want := (parsed{Content: in}); !sameParsed(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
