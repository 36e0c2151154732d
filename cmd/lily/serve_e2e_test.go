package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lily-engine/lily/fixtures/goldens"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/server"
)

// TestServeMatchesRun serves a synthesized checkpoint through the real model wiring and checks that
// a greedy chat completion returns the prompt ids lily's renderer and tokenizer build and the same
// tokens `lily run` generates from them, on both backends.
func TestServeMatchesRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	if code, _, e := runLily("synth", "--preset", "tiny", "--layout", "mlx", "--seed", "11", "--out", dir); code != 0 {
		t.Fatalf("synth: %s", e)
	}
	const question = "What is lily?"
	want, err := encodePrompt(dir, question, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"ref", "fast"} {
		t.Run(backend, func(t *testing.T) {
			got, m := serveChat(t, dir, backend, []map[string]string{{"role": "user", "content": question}}, 6)
			if !slices.Equal(got.PromptTokenIDs, want) {
				t.Fatalf("prompt ids\n got %v\nwant %v", got.PromptTokenIDs, want)
			}
			res, err := generate(context.Background(), m, want, 6, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Choices[0].TokenIDs, res.TokenIDs) {
				t.Fatalf("server generated %v, run generates %v", got.Choices[0].TokenIDs, res.TokenIDs)
			}
		})
	}
}

// TestServeMatchesTransformers sends each fixture model's chat golden through the real server (ref
// and fast backends): the prompt ids must equal transformers' apply_chat_template ids and the greedy
// completion transformers' own greedy continuation.
func TestServeMatchesTransformers(t *testing.T) {
	for _, name := range []string{"tiny-a", "tiny-b"} {
		dir := filepath.Join("..", "..", "fixtures", "models", name, "mlx")
		g, err := goldens.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, backend := range []string{"ref", "fast"} {
			t.Run(name+"/"+backend, func(t *testing.T) {
				got, _ := serveChat(t, dir, backend, g.Chat.Messages, len(g.Chat.Greedy.NewIDs))
				if !slices.Equal(got.PromptTokenIDs, toInt32(g.Chat.IDs)) {
					t.Fatalf("prompt ids\n got %v\nwant %v", got.PromptTokenIDs, g.Chat.IDs)
				}
				if !slices.Equal(got.Choices[0].TokenIDs, toInt32(g.Chat.Greedy.NewIDs)) {
					t.Fatalf("greedy\n got %v\nwant %v", got.Choices[0].TokenIDs, g.Chat.Greedy.NewIDs)
				}
			})
		}
	}
}

func toInt32(xs []int) []int32 {
	out := make([]int32, len(xs))
	for i, x := range xs {
		out[i] = int32(x)
	}
	return out
}

// chatReply is the part of a chat completion the end-to-end tests compare.
type chatReply struct {
	PromptTokenIDs []int32 `json:"prompt_token_ids"`
	Choices        []struct {
		TokenIDs []int32 `json:"token_ids"`
	} `json:"choices"`
}

// serveChat serves the checkpoint in dir on backend through the real model wiring, sends one greedy
// chat completion with return_token_ids, and returns the reply and the backend it ran on.
func serveChat(t *testing.T, dir, backend string, messages any, maxTokens int) (chatReply, engine.Backend) {
	t.Helper()
	m, closeModel, err := openModel(dir, backendSpec{name: backend, device: "cpu"}, func(int64, int64) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeModel() })
	m.Name = "lily-test"
	srv, err := server.New(server.Config{Model: m, Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	body, _ := json.Marshal(map[string]any{
		"model": "lily-test", "temperature": 0, "max_tokens": maxTokens, "return_token_ids": true,
		"messages": messages,
	})
	resp, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got chatReply
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 || len(got.Choices) != 1 {
		t.Fatalf("status %d: %v %+v", resp.StatusCode, err, got)
	}
	return got, m.Backend
}
