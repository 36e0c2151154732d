package sdkcheck_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/lily-engine/lily/internal/server/servertest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// These tests drive the server with the official OpenAI Go SDK, as real clients do.

func sdkClient(e *servertest.Env) openai.Client {
	return openai.NewClient(option.WithBaseURL(e.TS.URL+"/v1/"), option.WithAPIKey("sk-test"),
		option.WithHTTPClient(e.TS.Client()), option.WithMaxRetries(0))
}

func rawString(t *testing.T, raw string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatalf("%v: %q", err, raw)
	}
	return s
}

func TestSDKChat(t *testing.T) {
	e := servertest.New(t)
	e.Script("Thinking hard.</think>\n\nThe answer is 4.")
	c := sdkClient(e)
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    servertest.ModelName,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("2+2?")},
		Seed:     openai.Int(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := resp.Choices[0].Message
	if m.Content != "The answer is 4." || resp.Choices[0].FinishReason != "stop" || resp.Usage.CompletionTokens == 0 {
		t.Fatalf("%+v", resp)
	}
	if got := rawString(t, m.JSON.ExtraFields["reasoning_content"].Raw()); got != "Thinking hard." {
		t.Fatalf("reasoning_content %q", got)
	}
	// Errors come back as SDK API errors with the status.
	_, err = c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "other-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("unknown model: %v", err)
	}
}

func TestSDKChatStream(t *testing.T) {
	e := servertest.New(t)
	e.Script("Hmm.</think>Streaming works.")
	c := sdkClient(e)
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         servertest.ModelName,
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	acc := openai.ChatCompletionAccumulator{}
	var reasoning strings.Builder
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		if len(ch.Choices) > 0 {
			// Extra fields are kept raw (the SDK marks fields it has no type for as not "valid").
			if f, ok := ch.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
				reasoning.WriteString(rawString(t, f.Raw()))
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != "Streaming works." || acc.Choices[0].FinishReason != "stop" ||
		reasoning.String() != "Hmm." || acc.Usage.TotalTokens == 0 {
		t.Fatalf("content %q finish %q reasoning %q usage %+v", acc.Choices[0].Message.Content,
			acc.Choices[0].FinishReason, reasoning.String(), acc.Usage)
	}
}

func TestSDKToolRoundTrip(t *testing.T) {
	e := servertest.New(t)
	call := e.Tok.Encode(`Need weather.</think><tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>`)
	answer := e.Tok.Encode(`Got it.</think>It is sunny in Paris.`)
	e.B.Respond = func(prompt []int32) []int32 {
		if text, _ := e.Tok.Decode(prompt, false); strings.Contains(text, "<|im_start|>tool\nsunny") {
			return answer
		}
		return call
	}
	c := sdkClient(e)
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:       "get_weather",
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	})}
	params := openai.ChatCompletionNewParams{
		Model:    servertest.ModelName,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools:    tools,
	}
	for _, streamed := range []bool{false, true} {
		var msg openai.ChatCompletionMessage
		var finish string
		if streamed {
			stream := c.Chat.Completions.NewStreaming(context.Background(), params)
			acc := openai.ChatCompletionAccumulator{}
			finished := 0
			for stream.Next() {
				acc.AddChunk(stream.Current())
				if tc, ok := acc.JustFinishedToolCall(); ok && tc.Name == "get_weather" {
					finished++
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if finished != 1 {
				t.Fatalf("accumulator saw %d finished tool calls", finished)
			}
			msg, finish = acc.Choices[0].Message, acc.Choices[0].FinishReason
		} else {
			resp, err := c.Chat.Completions.New(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			msg, finish = resp.Choices[0].Message, resp.Choices[0].FinishReason
		}
		if finish != "tool_calls" || len(msg.ToolCalls) != 1 {
			t.Fatalf("streamed=%v: finish %q calls %+v", streamed, finish, msg.ToolCalls)
		}
		tc := msg.ToolCalls[0]
		var args struct{ City string }
		if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil || tc.Function.Name != "get_weather" ||
			args.City != "Paris" || !strings.HasPrefix(tc.ID, "call_") {
			t.Fatalf("streamed=%v: tool call %+v", streamed, tc)
		}
		next := params
		next.Messages = append(append([]openai.ChatCompletionMessageParamUnion{}, params.Messages...),
			msg.ToParam(), openai.ToolMessage("sunny", tc.ID))
		resp, err := c.Chat.Completions.New(context.Background(), next)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Choices[0].Message.Content != "It is sunny in Paris." || resp.Choices[0].FinishReason != "stop" {
			t.Fatalf("streamed=%v: final %+v", streamed, resp.Choices[0])
		}
	}
}

func TestSDKCompletions(t *testing.T) {
	e := servertest.New(t)
	e.Script("there")
	c := sdkClient(e)
	resp, err := c.Completions.New(context.Background(), openai.CompletionNewParams{
		Model:     servertest.ModelName,
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Hi ")},
		MaxTokens: openai.Int(10),
		Echo:      openai.Bool(true),
		Logprobs:  openai.Int(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	// top_logprobs starts with null (the first prompt token has no score), which the SDK's typed
	// field does not take; the raw JSON has it.
	if ch.Text != "Hi there" || ch.FinishReason != "stop" || len(ch.Logprobs.Tokens) != 3+6 || len(ch.Logprobs.TokenLogprobs) != 9 ||
		!strings.HasPrefix(ch.Logprobs.JSON.TopLogprobs.Raw(), "[null,{") {
		t.Fatalf("%+v", resp)
	}
	stream := c.Completions.NewStreaming(context.Background(), openai.CompletionNewParams{
		Model:  servertest.ModelName,
		Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{int64(e.Tok.ID("H")), int64(e.Tok.ID("i"))}},
	})
	var text strings.Builder
	for stream.Next() {
		if cur := stream.Current(); len(cur.Choices) > 0 {
			text.WriteString(cur.Choices[0].Text)
		}
	}
	if err := stream.Err(); err != nil || text.String() != "there" {
		t.Fatalf("stream: %q %v", text.String(), err)
	}
}
