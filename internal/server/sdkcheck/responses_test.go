package sdkcheck_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/lily-engine/lily/internal/server/servertest"
)

// rawOutput is the part of a response the tests read, decoded from its JSON.
type rawOutput struct {
	Output []struct {
		Type, Name, Arguments string
		CallID                string `json:"call_id"`
		Content               []struct{ Type, Text string }
	} `json:"output"`
}

func outputOf(t *testing.T, raw string) rawOutput {
	t.Helper()
	var o rawOutput
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		t.Fatal(err)
	}
	return o
}

func callOutput(callID, output string) responses.ResponseInputItemUnionParam {
	item := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	item.OfFunctionCallOutput.CallID = openai.String(callID)
	return item
}

func TestSDKResponses(t *testing.T) {
	e := servertest.New(t)
	e.Script("Thinking.</think>\n\nHello there.")
	c := sdkClient(e)
	ctx := context.Background()
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model:        servertest.ModelName,
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
		Instructions: openai.String("Be brief."),
	})
	if err != nil {
		t.Fatal(err)
	}
	o := outputOf(t, resp.RawJSON())
	if resp.OutputText() != "Hello there." || resp.Status != "completed" || len(o.Output) != 2 ||
		o.Output[0].Type != "reasoning" || o.Output[0].Content[0].Text != "Thinking." || resp.Usage.InputTokens == 0 {
		t.Fatalf("%s", resp.RawJSON())
	}
	// The stored conversation continues with previous_response_id: the prompt holds the first turn.
	next, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: servertest.ModelName, PreviousResponseID: openai.String(resp.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("and?")},
	})
	if err != nil || next.Usage.InputTokens <= resp.Usage.InputTokens+int64(len("Hello there.")) {
		t.Fatalf("previous_response_id: %v %s", err, next.RawJSON())
	}
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{
		Model: servertest.ModelName, PreviousResponseID: openai.String("resp_nope"),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("x")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("unknown previous_response_id: %v", err)
	}
}

func TestSDKResponsesStream(t *testing.T) {
	e := servertest.New(t)
	e.Script("Hm.</think>\n\nStreamed answer.")
	c := sdkClient(e)
	stream := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: servertest.ModelName, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	})
	var text, reasoning strings.Builder
	var types []string
	var final responses.Response
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.reasoning_text.delta":
			reasoning.WriteString(ev.Delta)
		case "response.completed":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "Streamed answer." || reasoning.String() != "Hm." || final.OutputText() != "Streamed answer." {
		t.Fatalf("text %q reasoning %q final %q; events %v", text.String(), reasoning.String(), final.OutputText(), types)
	}
	if types[0] != "response.created" || types[len(types)-1] != "response.completed" {
		t.Fatalf("events %v", types)
	}
}

func TestSDKResponsesTools(t *testing.T) {
	e := servertest.New(t)
	e.Script(`x</think><tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>`)
	c := sdkClient(e)
	tools := []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}
	resp, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: servertest.ModelName, Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("weather?")},
	})
	if err != nil {
		t.Fatal(err)
	}
	o := outputOf(t, resp.RawJSON())
	last := o.Output[len(o.Output)-1]
	if last.Type != "function_call" || last.Name != "get_weather" || last.Arguments != `{"city":"Paris"}` {
		t.Fatalf("%s", resp.RawJSON())
	}
	// The call's output goes back as a function_call_output item.
	e.Script("x</think>It is sunny.")
	back, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: servertest.ModelName, Tools: tools, PreviousResponseID: openai.String(resp.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			callOutput(last.CallID, "sunny")}},
	})
	if err != nil || back.OutputText() != "It is sunny." {
		t.Fatalf("%v %s", err, back.RawJSON())
	}
	// A JSON-schema text format is enforced.
	e.B.Script = nil
	schema := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}},
		"required": []string{"n"}, "additionalProperties": false}
	js, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: servertest.ModelName, Temperature: openai.Float(1), MaxOutputTokens: openai.Int(60),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("n?")},
		Text:  responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigParamOfJSONSchema("n", schema)},
	})
	var doc struct{ N *int }
	if err != nil || json.Unmarshal([]byte(js.OutputText()), &doc) != nil || doc.N == nil {
		t.Fatalf("json_schema: %v %s", err, js.RawJSON())
	}
}
