package main

import (
	"encoding/json"
	"fmt"
	"github.com/lily-engine/lily/internal/safefile"
	"path/filepath"

	"github.com/lily-engine/lily/internal/server"
	"github.com/lily-engine/lily/internal/tokenizer"
)

// chatInput is a conversation to render: the --chat FILE of lily tokenize.
type chatInput struct {
	Messages            json.RawMessage            `json:"messages"`
	Tools               json.RawMessage            `json:"tools"`
	AddGenerationPrompt bool                       `json:"add_generation_prompt"`
	ChatTemplateKwargs  map[string]json.RawMessage `json:"chat_template_kwargs"`
	opt                 server.RenderOptions       // from CheckChatInput
}

// readChatFile reads and decodes a --chat FILE.
func readChatFile(path string) (*chatInput, error) {
	b, err := safefile.ReadFile(path, maxChatFileBytes)
	if err != nil {
		return nil, err
	}
	var in chatInput
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(in.Messages) == 0 {
		return nil, fmt.Errorf("%s: no \"messages\"", path)
	}
	// The server's validation, so that a file and a request are judged alike.
	if in.opt, err = server.CheckChatInput(in.Messages, in.Tools, in.ChatTemplateKwargs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	in.opt.AddGenerationPrompt = in.AddGenerationPrompt
	return &in, nil
}

// render applies the Qwen3.6 chat template to the conversation.
func (in *chatInput) render() (string, error) {
	return chatFormat{}.Render(in.Messages, in.Tools, in.opt)
}

// loadTokenizer loads DIR/tokenizer.json and makes sure it has the chat format's added tokens.
func loadTokenizer(dir string) (*tokenizer.Tokenizer, error) {
	path := filepath.Join(dir, "tokenizer.json")
	tk, err := tokenizer.Load(path)
	if err != nil {
		return nil, err
	}
	if err := tk.RequireAdded(tokenizer.ChatTokens...); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tk, nil
}

// encodePrompt turns a text prompt into ids; with asChat it is first rendered as one user turn
// with the generation prompt (thinking on, the template's default).
func encodePrompt(dir, prompt string, asChat bool) ([]int32, error) {
	tk, err := loadTokenizer(dir)
	if err != nil {
		return nil, err
	}
	if asChat {
		msgs, _ := json.Marshal([]map[string]string{{"role": "user", "content": prompt}})
		in := chatInput{Messages: msgs, opt: server.RenderOptions{AddGenerationPrompt: true}}
		if prompt, err = in.render(); err != nil {
			return nil, err
		}
	}
	return tk.Encode(prompt), nil
}

// detokenize decodes generated ids to text, skipping special tokens.
func detokenize(dir string, ids []int32) (string, error) {
	tk, err := loadTokenizer(dir)
	if err != nil {
		return "", err
	}
	return tk.Decode(ids, true)
}

// maxChatFileBytes bounds a --chat FILE.
const maxChatFileBytes = 64 << 20
