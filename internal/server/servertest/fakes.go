// Package servertest has test doubles for the server: a tiny tokenizer, a ChatML-like chat format
// and a harness that runs the real handler over enginetest's fake backend. Only tests import it.
package servertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/grammar"
	"github.com/lily-engine/lily/internal/server"
)

// Tokenizer is a tiny tokenizer: a few whole-word specials and tags, then one token per printable
// ASCII character and newline.
type Tokenizer struct{ vocab []string }

const (
	IDEndOfText = 0 // <|endoftext|>
	IDIMEnd     = 1 // <|im_end|>
	IDIMStart   = 2 // <|im_start|>
	FirstPlain  = 3 // ids from here on are not special
)

// NewTokenizer returns the fake tokenizer: specials, think and tool tags, printable ASCII, newline, é,
// two byte tokens.
func NewTokenizer() *Tokenizer {
	v := []string{"<|endoftext|>", "<|im_end|>", "<|im_start|>", "<think>", "</think>", "<tool_call>", "</tool_call>"}
	for c := byte(32); c < 127; c++ {
		v = append(v, string(c))
	}
	// Two byte tokens that are parts of one character (as byte-level BPE has): each decodes as U+FFFD.
	v = append(v, "\n", "é", "\xf0", "\x9f")
	return &Tokenizer{vocab: v}
}

func (t *Tokenizer) VocabSize() int { return len(t.vocab) }

func (t *Tokenizer) Encode(text string) []int32 {
	var ids []int32
	for len(text) > 0 {
		best, bestLen := int32(-1), 0
		for id, s := range t.vocab {
			if len(s) > bestLen && strings.HasPrefix(text, s) {
				best, bestLen = int32(id), len(s)
			}
		}
		if best < 0 {
			best, bestLen = t.ID("?"), 1
		}
		ids = append(ids, best)
		text = text[bestLen:]
	}
	return ids
}

func (t *Tokenizer) ID(s string) int32 {
	id, _ := t.TokenID(s)
	return id
}

// Decode decodes ids; like the real tokenizer, an id past the vocabulary (the model's padded
// rows) is nothing and a negative id an error.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) (string, error) {
	var sb strings.Builder
	for _, id := range ids {
		if id < 0 {
			return "", fmt.Errorf("fake tokenizer: no token %d", id)
		}
		s, _ := t.Token(id)
		if !skipSpecial || !t.IsSpecial(id) {
			sb.WriteString(s)
		}
	}
	return sb.String(), nil
}

func (t *Tokenizer) TokenID(tok string) (int32, bool) {
	for id, s := range t.vocab {
		if s == tok {
			return int32(id), true
		}
	}
	return 0, false
}

func (t *Tokenizer) Token(id int32) (string, bool) {
	if id < 0 || int(id) >= len(t.vocab) {
		return "", false
	}
	return t.vocab[id], true
}

func (t *Tokenizer) IsSpecial(id int32) bool { return id >= 0 && id < FirstPlain }

// TokenBytes returns the token's bytes (nil past the vocabulary).
func (t *Tokenizer) TokenBytes(id int32) []byte {
	s, ok := t.Token(id)
	if !ok {
		return nil
	}
	return []byte(s)
}

type decoder struct {
	t    *Tokenizer
	skip bool
}

func (d *decoder) Add(id int32) (string, error) { return d.t.Decode([]int32{id}, d.skip) }
func (d *decoder) Flush() string                { return "" }

func (t *Tokenizer) NewDecoder(skip bool) engine.TextDecoder { return &decoder{t: t, skip: skip} }

// Chat renders a ChatML-like prompt and parses <think>…</think> and <tool_call>{json}</tool_call>.
type Chat struct{}

func (Chat) Render(messages, tools json.RawMessage, opt server.RenderOptions) (string, error) {
	var msgs []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	}
	if err := json.Unmarshal(messages, &msgs); err != nil {
		return "", err
	}
	var sb strings.Builder
	if len(tools) > 0 && string(tools) != "null" {
		sb.WriteString("<|im_start|>system\nTOOLS<|im_end|>\n")
	}
	for _, m := range msgs {
		if m.Content == "RAISE" {
			return "", errors.New("template raised: bad conversation")
		}
		fmt.Fprintf(&sb, "<|im_start|>%s\n%v<|im_end|>\n", m.Role, m.Content)
	}
	if opt.AddGenerationPrompt {
		sb.WriteString("<|im_start|>assistant\n")
		if opt.EnableThinking != nil && !*opt.EnableThinking {
			sb.WriteString("<think>\n\n</think>\n\n")
		} else {
			sb.WriteString("<think>\n")
		}
	}
	return sb.String(), nil
}

func (Chat) NewParser(tools json.RawMessage, thinking bool) (server.Parser, error) {
	t := strings.TrimSpace(string(tools))
	p := &parser{mode: "content", tools: t != "" && t != "null" && t != "[]"}
	if thinking {
		p.mode = "reasoning"
	}
	return p, nil
}

type parser struct {
	tools bool   // tool calls are parsed only for a request with tools, as internal/chat does
	mode  string // reasoning, content, tool
	buf   string
	calls int
	fresh bool // content just started: drop leading newlines
}

// heldPrefix is the length of the longest suffix of s that starts tag.
func heldPrefix(s, tag string) int {
	for n := min(len(tag)-1, len(s)); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

func (p *parser) emit(text string) server.Delta {
	if p.mode == "reasoning" {
		return server.Delta{Reasoning: text}
	}
	return server.Delta{Content: text}
}

func (p *parser) Add(chunk string) []server.Delta {
	p.buf += chunk
	var out []server.Delta
	for {
		switch p.mode {
		case "reasoning", "content":
			if p.mode == "content" && p.fresh {
				if p.buf = strings.TrimLeft(p.buf, "\n"); p.buf == "" {
					return out
				}
				p.fresh = false
			}
			tag := "</think>"
			if p.mode == "content" {
				if !p.tools {
					out = append(out, p.emit(p.buf))
					p.buf = ""
					return out
				}
				tag = "<tool_call>"
			}
			if i := strings.Index(p.buf, tag); i >= 0 {
				if i > 0 {
					out = append(out, p.emit(p.buf[:i]))
				}
				p.buf = p.buf[i+len(tag):]
				if p.mode == "reasoning" {
					p.mode, p.fresh = "content", true
				} else {
					p.mode = "tool"
				}
				continue
			}
			keep := heldPrefix(p.buf, tag)
			if n := len(p.buf) - keep; n > 0 {
				out = append(out, p.emit(p.buf[:n]))
				p.buf = p.buf[n:]
			}
			return out
		case "tool":
			i := strings.Index(p.buf, "</tool_call>")
			if i < 0 {
				return out
			}
			var call struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal([]byte(p.buf[:i]), &call); err == nil {
				args := string(call.Arguments)
				half := len(args) / 2
				out = append(out,
					server.Delta{ToolCall: &server.ToolCallDelta{Index: p.calls, Name: call.Name, Arguments: args[:half]}},
					server.Delta{ToolCall: &server.ToolCallDelta{Index: p.calls, Arguments: args[half:]}})
				p.calls++
			}
			p.mode, p.buf, p.fresh = "content", p.buf[i+len("</tool_call>"):], true
		}
	}
}

func (p *parser) Finish() []server.Delta {
	if p.buf == "" || p.mode == "tool" {
		return nil
	}
	d := p.emit(p.buf)
	p.buf = ""
	return []server.Delta{d}
}

// ToolCallGrammar is the fake format's answer of tool calls only:
// <tool_call>{"name":NAME,"arguments":ARGS}</tool_call>, ARGS following the tool's parameters.
func (Chat) ToolCallGrammar(tools json.RawMessage, name string, parallel bool) (*grammar.Node, error) {
	var list []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(tools, &list); err != nil {
		return nil, err
	}
	var alts []*grammar.Node
	for _, t := range list {
		if name != "" && t.Function.Name != name {
			continue
		}
		args := grammar.AnyObject()
		if len(t.Function.Parameters) > 0 {
			var err error
			if args, err = grammar.SchemaNode(t.Function.Parameters); err != nil {
				return nil, err
			}
		}
		key, _ := json.Marshal(t.Function.Name)
		alts = append(alts, grammar.Seq(grammar.Lit(`<tool_call>{"name":`+string(key)+`,"arguments":`), args, grammar.Lit("}</tool_call>")))
	}
	calls := grammar.Alt(alts...)
	if parallel {
		return grammar.Seq(calls, grammar.Star(calls)), nil
	}
	return calls, nil
}
