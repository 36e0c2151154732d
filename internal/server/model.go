package server

import (
	"encoding/json"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/grammar"
)

// The server depends on the tokenizer and the chat format through these small interfaces, so that it
// builds and is tested without them; cmd/lily wires the real packages in.

// Tokenizer is what the server uses of *tokenizer.Tokenizer, which satisfies it as is.
// Implementations must be safe for concurrent use.
type Tokenizer interface {
	Encode(text string) []int32
	Decode(ids []int32, skipSpecial bool) (string, error)
	TokenID(tok string) (int32, bool)
	Token(id int32) (string, bool)
	IsSpecial(id int32) bool
	VocabSize() int
	// TokenBytes is the bytes id decodes to (nil for an id no token has).
	TokenBytes(id int32) []byte
}

// Chat renders conversations and parses model output (internal/chat through a thin adapter that
// converts its Options and Delta types). Implementations must be safe for concurrent use; a Parser
// is used by one goroutine.
type Chat interface {
	// Render turns OpenAI messages and tools into the prompt text; its errors are the client's.
	Render(messages, tools json.RawMessage, opt RenderOptions) (string, error)
	// NewParser returns a streaming parser of the model's output; thinking says whether the output
	// starts inside a reasoning block.
	NewParser(tools json.RawMessage, thinking bool) (Parser, error)
	// ToolCallGrammar is the grammar of an answer that is only tool calls in the model's format:
	// calls of the function name (any of the tools when ""), one or (parallel) several, with
	// arguments following each tool's parameter schema where the grammar supports it. Its errors
	// are the client's.
	ToolCallGrammar(tools json.RawMessage, name string, parallel bool) (*grammar.Node, error)
}

// RenderOptions mirrors chat.Options.
type RenderOptions struct {
	AddGenerationPrompt bool
	EnableThinking      *bool
	PreserveThinking    *bool
	Extra               map[string]json.RawMessage
}

// Parser splits streamed output text into reasoning, content and tool-call deltas (chat.Parser).
type Parser interface {
	Add(chunk string) []Delta
	Finish() []Delta
}

// Delta mirrors chat.Delta: one piece of parsed output.
type Delta struct {
	Reasoning, Content string
	ToolCall           *ToolCallDelta
}

// ToolCallDelta mirrors chat.ToolCallDelta. Name is set on a call's first delta only; Arguments is
// a fragment of the JSON arguments text.
type ToolCallDelta struct {
	Index     int
	Name      string
	Arguments string
}

// Model is what the server serves: one backend with its tokenizer and chat format.
type Model struct {
	// Name is the model id of /v1/models; requests naming another model get 404.
	Name    string
	Backend engine.Backend
	Tok     Tokenizer
	// NewDecoder returns a streaming detokenizer: func(s bool) engine.TextDecoder { return tok.NewDecoder(s) }.
	NewDecoder func(skipSpecial bool) engine.TextDecoder
	Chat       Chat
	// BackendName and Device say what computes, for GET /v1/lily/info (e.g. "fast" and "cpu";
	// empty: unknown).
	BackendName, Device string
}
