// The model side of `lily serve`: the checkpoint, a backend, the tokenizer and the chat format
// behind server.Model.

package main

import (
	"encoding/json"
	"github.com/lily-engine/lily/fast"

	"github.com/lily-engine/lily/internal/chat"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/grammar"
	"github.com/lily-engine/lily/internal/server"
)

// openModel loads the checkpoint (dir, or the Hugging Face cache when empty) on the named backend
// and device, with its tokenizer and the chat format. The returned function releases it all.
func openModel(dir string, spec backendSpec, progress func(done, total int64)) (server.Model, func() error, error) {
	l, err := openBackend(dir, spec)
	if err != nil {
		return server.Model{}, nil, err
	}
	progress(1, 1)
	tok, err := loadTokenizer(l.dir)
	if err != nil {
		l.close()
		return server.Model{}, nil, err
	}
	m := server.Model{
		Backend:    l.backend,
		Tok:        tok,
		NewDecoder: func(skip bool) engine.TextDecoder { return tok.NewDecoder(skip) },
		Chat:       chatFormat{},

		BackendName: spec.name,
		Device:      deviceOf(spec, l.backend),
	}
	return m, l.close, nil
}

// deviceOf names where backend b, built from spec, computes: ref and the fast CPU engine on the
// cpu; the Metal engine names its device ("metal" or "metal-emu").
func deviceOf(spec backendSpec, b engine.Backend) string {
	if _, ok := b.(*fast.Model); ok || spec.name == "ref" {
		return "cpu"
	}
	return b.Name()
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

func (chatFormat) ToolCallGrammar(tools json.RawMessage, name string, parallel bool) (*grammar.Node, error) {
	return chat.ToolCallGrammar(tools, name, parallel)
}
