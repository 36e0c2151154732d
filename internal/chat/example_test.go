package chat_test

import (
	"encoding/json"
	"fmt"

	"github.com/lily-engine/lily/internal/chat"
)

func ExampleRender() {
	prompt, err := chat.Render(json.RawMessage(`[{"role":"user","content":"Hi"}]`), nil,
		chat.Options{AddGenerationPrompt: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n", prompt)
	// Output: "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n"
}

func ExampleParser() {
	tools := json.RawMessage(`[{"type":"function","function":{"name":"add","parameters":{"type":"object",
		"properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}}}]`)
	p, err := chat.NewParser(tools, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	var deltas []chat.Delta
	for _, chunk := range []string{"Add them.\n</th", "ink>\n\n<tool_call>\n<function=add>\n",
		"<parameter=a>\n2\n</parameter>\n<parameter=b>\n3\n</parameter>\n</function>\n</tool_call>"} {
		deltas = append(deltas, p.Add(chunk)...)
	}
	deltas = append(deltas, p.Finish()...)
	for _, d := range deltas {
		switch {
		case d.Reasoning != "":
			fmt.Printf("reasoning %q\n", d.Reasoning)
		case d.Content != "":
			fmt.Printf("content %q\n", d.Content)
		default:
			fmt.Printf("call %d name=%q args=%q\n", d.ToolCall.Index, d.ToolCall.Name, d.ToolCall.Arguments)
		}
	}
	// Output:
	// reasoning "Add them."
	// call 0 name="add" args=""
	// call 0 name="" args="{\"a\": 2, \"b\": 3}"
}
