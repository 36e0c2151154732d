package server

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/grammar"
)

// responseFormat is a parsed response_format: the grammar the answer must follow.
type responseFormat struct {
	Type string // "json_object" or "json_schema"
	Root *grammar.Node
}

// parseResponseFormat reads response_format: absent, null or {"type":"text"} is free text;
// json_object is any JSON object; json_schema is the schema's documents (the subset internal/grammar
// supports; anything else is a 400 naming the keyword).
func parseResponseFormat(raw json.RawMessage) (*responseFormat, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	var f struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(t, &f); err != nil {
		return nil, &ParamError{Param: "response_format", Message: "must be an object with a type"}
	}
	switch f.Type {
	case "text":
		return nil, nil
	case "json_object":
		return &responseFormat{Type: f.Type, Root: grammar.AnyObject()}, nil
	case "json_schema":
		const param = "response_format.json_schema.schema"
		if f.JSONSchema == nil || len(bytes.TrimSpace(f.JSONSchema.Schema)) == 0 {
			return nil, &ParamError{Param: param, Message: "is required"}
		}
		n, err := grammar.SchemaNode(f.JSONSchema.Schema)
		if err == nil {
			_, err = grammar.Compile(n)
		}
		if err != nil {
			return nil, &ParamError{Param: param, Message: err.Error()}
		}
		return &responseFormat{Type: f.Type, Root: n}, nil
	}
	return nil, &ParamError{Param: "response_format", Message: fmt.Sprintf(`type %q is not supported (want "text", "json_object" or "json_schema")`, f.Type)}
}

// constraint returns a maker of a fresh constraint per choice for a completion's response
// format, or nil when the output is free.
func (s *Server) constraint(f *responseFormat, stops []int32) (func(r *engine.Request) engine.Constraint, error) {
	if f == nil {
		return nil, nil
	}
	g, err := grammar.Compile(f.Root)
	if err != nil {
		return nil, &ParamError{Param: "response_format", Message: err.Error()}
	}
	return s.grammarMaker(g, stops, -1), nil
}

// chatConstraint is constraint for chat: the response format, or the call tool_choice requires,
// after the reasoning block when thinking is on; or the end of the turn after one call when
// parallel_tool_calls is false.
func (s *Server) chatConstraint(f *responseFormat, tp *toolPolicy, thinking bool, stops []int32) (func(r *engine.Request) engine.Constraint, error) {
	thinkEnd := int32(-1)
	if id, ok := s.m.Tok.TokenID("</think>"); ok && thinking {
		thinkEnd = id
	}
	var root *grammar.Node
	switch {
	case tp.mode == toolRequired || tp.mode == toolNamed:
		n, err := s.m.Chat.ToolCallGrammar(tp.tools, tp.name, tp.parallel)
		if err != nil {
			return nil, &ParamError{Param: "tools", Message: err.Error()}
		}
		root = n
	case f != nil:
		root = grammar.Seq(grammar.WS(2), f.Root)
	default:
		close, ok := s.m.Tok.TokenID("</tool_call>")
		if tp.parallel || tp.tools == nil || tp.mode == toolNone || !ok {
			return nil, nil
		}
		return func(*engine.Request) engine.Constraint { return &endAfter{after: close, stops: stops} }, nil
	}
	g, err := grammar.Compile(root)
	if err != nil {
		return nil, &ParamError{Param: "tools", Message: err.Error()}
	}
	return s.grammarMaker(g, stops, thinkEnd), nil
}

// grammarMaker returns constraints that hold the output to g (after thinkEnd when it is ≥ 0).
func (s *Server) grammarMaker(g *grammar.Grammar, stops []int32, thinkEnd int32) func(r *engine.Request) engine.Constraint {
	v := s.vocab()
	return func(r *engine.Request) engine.Constraint {
		return &grammarConstraint{v: v, g: g, m: g.Start(), stops: stops, thinkEnd: thinkEnd,
			thinking: thinkEnd >= 0, maxTokens: r.MaxTokens}
	}
}

// vocab is the tokenizer's byte strings for grammar masks, built on first use: special tokens,
// stop ids and ids without a token are never allowed inside a grammar.
func (s *Server) vocab() *grammar.Vocab {
	s.vocabOnce.Do(func() {
		n := s.m.Backend.VocabSize()
		toks := make([][]byte, n)
		for id := range int32(n) {
			if !s.m.Tok.IsSpecial(id) {
				toks[id] = s.m.Tok.TokenBytes(id)
			}
		}
		for _, id := range s.stopIDs {
			if int(id) < n {
				toks[id] = nil
			}
		}
		s.gvocab = grammar.NewVocab(toks, n)
	})
	return s.gvocab
}

// grammarConstraint holds generated text to a grammar. While thinking (before thinkEnd) the text
// is free but cannot end, and thinkEnd is forced when only enough tokens for the shortest answer
// are left; then every token must keep the text a prefix of the grammar's language with the rest
// writable in the tokens left, and the stop ids are allowed once the text is complete.
type grammarConstraint struct {
	v         *grammar.Vocab
	g         *grammar.Grammar
	m         *grammar.Matcher
	stops     []int32
	thinkEnd  int32
	thinking  bool
	maxTokens int
	generated int
}

// errNoToken: no token of the vocabulary can continue the text (the grammar needs a byte that no
// token has): the request asked for output the model cannot write.
var errNoToken = &ParamError{Param: "response_format", Message: "no token of the vocabulary continues the output the grammar allows"}

func (c *grammarConstraint) Mask(logits []float32) error {
	left := c.maxTokens - c.generated // tokens left, this one included
	if c.thinking {
		if left <= c.g.MinLen()+3 { // </think>, the shortest answer and a stop token
			keep := logits[c.thinkEnd]
			for i := range logits {
				logits[i] = float32(negInf)
			}
			logits[c.thinkEnd] = keep
			return nil
		}
		for _, id := range c.stops {
			if int(id) < len(logits) {
				logits[id] = float32(negInf)
			}
		}
		return nil
	}
	saved := make([]float32, len(c.stops))
	for i, id := range c.stops {
		if int(id) < len(logits) {
			saved[i] = logits[id]
		}
	}
	// The rest must fit in the tokens left after this one, less one for a stop token, so that a
	// complete answer ends with "stop" rather than "length".
	any := c.v.Mask(logits, c.m, max(left-2, 0))
	if c.m.Complete() {
		for i, id := range c.stops {
			if int(id) < len(logits) {
				logits[id], any = saved[i], true
			}
		}
	}
	if !any {
		return errNoToken
	}
	return nil
}

func (c *grammarConstraint) Accept(id int32) error {
	c.generated++
	if c.thinking {
		c.thinking = id != c.thinkEnd
		return nil
	}
	if c.m.Complete() && isStop(id, c.stops) {
		return nil
	}
	c.m = c.m.Feed(c.v.Bytes(id))
	if c.m.Dead() {
		return fmt.Errorf("token %d leaves the structured output", id)
	}
	return nil
}
