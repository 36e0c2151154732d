//go:build lily_merge_wiring

// This file is the model wiring of `lily serve`, kept out of the build (by its tag) until
// internal/checkpoint's Open, ref, internal/tokenizer and internal/chat are merged. At merge: drop
// the build line, adjust the three loader calls to their final signatures, and make openModel
// (cmd_serve.go) return openModelMerged(dir, backend, progress).

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/lily-engine/lily/internal/chat"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/server"
	"github.com/lily-engine/lily/internal/tokenizer"
	"github.com/lily-engine/lily/ref"
)

func openModelMerged(dir, backend string, progress func(done, total int64)) (server.Model, func() error, error) {
	w, err := checkpoint.Open(dir)
	if err != nil {
		return server.Model{}, nil, err
	}
	var b engine.Backend
	switch backend {
	case "ref":
		if b, err = ref.New(w); err != nil {
			return server.Model{}, nil, err
		}
	default:
		return server.Model{}, nil, fmt.Errorf("backend %q is not built yet", backend)
	}
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return server.Model{}, nil, err
	}
	m := server.Model{
		Backend:    b,
		Tok:        tok,
		NewDecoder: func(skip bool) engine.TextDecoder { return tok.NewDecoder(skip) },
		Chat:       chatFormat{},
	}
	return m, func() error { return nil }, nil
}

// chatFormat adapts internal/chat to server.Chat. It holds no state: safe for concurrent use.
type chatFormat struct{}

func (chatFormat) Render(messages, tools json.RawMessage, o server.RenderOptions) (string, error) {
	return chat.Render(messages, tools, chat.Options{
		AddGenerationPrompt: o.AddGenerationPrompt,
		EnableThinking:      o.EnableThinking,
		PreserveThinking:    o.PreserveThinking,
		Extra:               o.Extra,
	})
}

func (chatFormat) NewParser(tools json.RawMessage, thinking bool) (server.Parser, error) {
	p, err := chat.NewParser(tools, thinking)
	if err != nil {
		return nil, err
	}
	return chatParser{p}, nil
}

// chatParser converts chat.Delta to server.Delta; one goroutine uses it, like the parser it wraps.
type chatParser struct{ p *chat.Parser }

func (c chatParser) Add(chunk string) []server.Delta { return toServerDeltas(c.p.Add(chunk)) }
func (c chatParser) Finish() []server.Delta          { return toServerDeltas(c.p.Finish()) }

func toServerDeltas(ds []chat.Delta) []server.Delta {
	out := make([]server.Delta, len(ds))
	for i, d := range ds {
		out[i] = server.Delta{Reasoning: d.Reasoning, Content: d.Content}
		if tc := d.ToolCall; tc != nil {
			out[i].ToolCall = &server.ToolCallDelta{Index: tc.Index, Name: tc.Name, Arguments: tc.Arguments}
		}
	}
	return out
}
