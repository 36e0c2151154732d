package server

import (
	"bytes"
	"encoding/json"
)

// This file holds the OpenAI (and vLLM-extension) wire types and their JSON shapes only: no
// handlers, no engine. Pointer fields distinguish "omitted" from a zero value, so omitted fields
// never override the model's defaults.

// StringList is `stop`: a string or an array of strings.
type StringList []string

// UnmarshalJSON accepts "s", ["a","b"] or null.
func (s *StringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*s = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = StringList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return &ParamError{Param: "stop", Message: "must be a string or an array of strings"}
	}
	*s = many
	return nil
}

// Prompt is the completions `prompt`: a string, an array of token ids, or a one-element array of either.
type Prompt struct {
	Text     string
	IDs      []int32
	IsIDs    bool
	Multiple bool // more than one prompt was given (batched prompts are not supported)
	Absent   bool
}

func badPrompt() error {
	return &ParamError{Param: "prompt", Message: "must be a string or an array of token ids"}
}

// UnmarshalJSON accepts "text", [1,2,3], ["text"], [[1,2,3]].
func (p *Prompt) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*p = Prompt{}
	switch {
	case bytes.Equal(b, []byte("null")):
		p.Absent = true
		return nil
	case len(b) > 0 && b[0] == '"':
		if err := json.Unmarshal(b, &p.Text); err != nil {
			return badPrompt()
		}
		return nil
	case len(b) > 0 && b[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(b, &items); err != nil {
			return badPrompt()
		}
		if len(items) == 0 {
			p.IsIDs = true
			return nil
		}
		first := bytes.TrimSpace(items[0])
		if len(first) > 0 && (first[0] == '"' || first[0] == '[') {
			if len(items) > 1 {
				p.Multiple = true
				return nil
			}
			// One level only: ["text"] or [[ids]]. Recursing on deeper nesting re-scanned the
			// rest of the body at every level (quadratic in the depth).
			if first[0] == '"' {
				return p.UnmarshalJSON(first)
			}
			p.IsIDs = true
			if err := json.Unmarshal(first, &p.IDs); err != nil {
				return badPrompt()
			}
			return nil
		}
		p.IsIDs = true
		if err := json.Unmarshal(b, &p.IDs); err != nil {
			return badPrompt()
		}
		return nil
	}
	return badPrompt()
}

// StreamOptions is `stream_options`.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// SamplingParams are the request fields shared by chat and completions.
type SamplingParams struct {
	Model            string         `json:"model"`
	Stream           bool           `json:"stream"`
	StreamOptions    *StreamOptions `json:"stream_options"`
	MaxTokens        *int           `json:"max_tokens"`
	Stop             StringList     `json:"stop"`
	Temperature      *float64       `json:"temperature"`
	TopP             *float64       `json:"top_p"`
	TopK             *int           `json:"top_k"`
	MinP             *float64       `json:"min_p"`
	Seed             *int64         `json:"seed"`
	PresencePenalty  *float64       `json:"presence_penalty"`
	FrequencyPenalty *float64       `json:"frequency_penalty"`
	N                *int           `json:"n"`
	ReturnTokenIDs   bool           `json:"return_token_ids"`
	ExtraParams
}

// ChatRequest is the body of POST /v1/chat/completions.
type ChatRequest struct {
	SamplingParams
	Messages            json.RawMessage            `json:"messages"`
	Tools               json.RawMessage            `json:"tools"`
	ToolChoice          json.RawMessage            `json:"tool_choice"`
	MaxCompletionTokens *int                       `json:"max_completion_tokens"`
	Logprobs            bool                       `json:"logprobs"`
	TopLogprobs         *int                       `json:"top_logprobs"`
	ChatTemplateKwargs  map[string]json.RawMessage `json:"chat_template_kwargs"`
	ParallelToolCalls   *bool                      `json:"parallel_tool_calls"`
}

// CompletionRequest is the body of POST /v1/completions.
type CompletionRequest struct {
	SamplingParams
	Prompt   Prompt  `json:"prompt"`
	Echo     bool    `json:"echo"`
	Logprobs *int    `json:"logprobs"`
	Suffix   *string `json:"suffix"`
	BestOf   *int    `json:"best_of"`
}

// TokenizeRequest is the body of POST /tokenize (vLLM): either a prompt or chat messages.
type TokenizeRequest struct {
	Model               string                     `json:"model"`
	Prompt              *string                    `json:"prompt"`
	Messages            json.RawMessage            `json:"messages"`
	Tools               json.RawMessage            `json:"tools"`
	AddGenerationPrompt *bool                      `json:"add_generation_prompt"`
	ChatTemplateKwargs  map[string]json.RawMessage `json:"chat_template_kwargs"`
	ReturnTokenStrs     bool                       `json:"return_token_strs"`
}

// TokenizeResponse answers /tokenize.
type TokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int32  `json:"tokens"`
	TokenStrs   []string `json:"token_strs,omitempty"`
}

// DetokenizeRequest is the body of POST /detokenize.
type DetokenizeRequest struct {
	Model  string  `json:"model"`
	Tokens []int32 `json:"tokens"`
}

// DetokenizeResponse answers /detokenize.
type DetokenizeResponse struct {
	Prompt string `json:"prompt"`
}

// Usage counts tokens.
type Usage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptTokensDetails reports prompt-cache reuse.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// ToolCall is a complete tool call in a chat message, or (with Index) a streamed delta of one.
type ToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function part of a tool call; Arguments is a JSON text.
type FunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// ChatMessage is the assistant message of a non-streamed choice. Content is null when the turn is
// only tool calls.
type ChatMessage struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// ChatDelta is the delta of a streamed chunk.
type ChatDelta struct {
	Role             string     `json:"role,omitempty"`
	Content          *string    `json:"content,omitempty"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// TopLogprob is one alternative in chat logprobs.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// TokenLogprob is one generated token in chat logprobs.
type TokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// ChatLogprobs is a choice's `logprobs`.
type ChatLogprobs struct {
	Content []TokenLogprob `json:"content"`
}

// ChatChoice is one choice of a chat completion; Message for a whole response, Delta for a chunk.
type ChatChoice struct {
	Index        int           `json:"index"`
	Message      *ChatMessage  `json:"message,omitempty"`
	Delta        *ChatDelta    `json:"delta,omitempty"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
	TokenIDs     []int32       `json:"token_ids,omitempty"`
}

// ChatResponse is a chat completion ("chat.completion") or one streamed chunk ("chat.completion.chunk").
type ChatResponse struct {
	ID             string       `json:"id"`
	Object         string       `json:"object"`
	Created        int64        `json:"created"`
	Model          string       `json:"model"`
	Choices        []ChatChoice `json:"choices"`
	Usage          *Usage       `json:"usage,omitempty"`
	PromptTokenIDs []int32      `json:"prompt_token_ids,omitempty"`
}

// CompletionLogprobs is the legacy completions `logprobs` object. A null entry in TokenLogprobs
// (and TopLogprobs) is the first prompt token, which has no score.
type CompletionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// CompletionChoice is one choice of a completion (whole or streamed).
type CompletionChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       *CompletionLogprobs `json:"logprobs"`
	FinishReason   *string             `json:"finish_reason"`
	PromptTokenIDs []int32             `json:"prompt_token_ids,omitempty"`
	TokenIDs       []int32             `json:"token_ids,omitempty"`
}

// CompletionResponse is a completion ("text_completion"), also used for streamed chunks.
type CompletionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []CompletionChoice `json:"choices"`
	Usage   *Usage             `json:"usage,omitempty"`
}

// ModelInfo is one entry of GET /v1/models.
type ModelInfo struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen int    `json:"max_model_len"`
}

// ModelList answers GET /v1/models.
type ModelList struct {
	Object string      `json:"object"`
	Data   []ModelInfo `json:"data"`
}

// ErrorBody is the OpenAI error envelope's inner object.
type ErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// ErrorResponse is the OpenAI error envelope.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}
