// Package chat implements the Qwen3.6 chat format: Render turns OpenAI-style messages and tools
// (raw request JSON) into the prompt text exactly as the model's Jinja chat template does under
// transformers' apply_chat_template, and Parser turns generated text back into reasoning_content,
// content and OpenAI tool calls, incrementally.
//
// The package depends on nothing else in lily. It never decodes JSON into map[string]any: key order
// and number spelling change the prompt, so values are kept in an order-preserving tree (value)
// and written back with Python json.dumps rules (jsondump.go).
package chat
