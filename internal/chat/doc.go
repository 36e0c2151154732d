// Package chat implements the Qwen3.6 chat format: Render turns OpenAI-style messages and tools
// (raw request JSON) into the prompt text exactly as the model's Jinja chat template does under
// transformers' apply_chat_template, and Parser turns generated text back into reasoning_content,
// content and OpenAI tool calls, incrementally.
//
// The package depends on nothing else in lily. It never decodes JSON into map[string]any: key order
// and number spelling change the prompt, so values are kept in an order-preserving tree (value)
// and written back with Python json.dumps rules (jsondump.go).
//
// # Rendering
//
// Render follows the template branch by branch (render.go, render_turns.go, content.go) and is
// checked byte for byte against jinja2 renderings in fixtures/chat/goldens. Where the template
// leaves room, lily decides:
//
//   - Tool-call arguments given as a string (the OpenAI wire form) are parsed as a JSON object and
//     rendered as that mapping; the template itself would fail on a string (|items needs a mapping).
//   - Errors the template raises come back as *TemplateError with the template's message; inputs
//     Jinja would fail on in other ways (arguments that are not a mapping, a tool call without a
//     name, messages or tools that are not arrays, content parts that are numbers, a text part whose
//     text is an array or object, which Python would print as a repr) are plain errors. All wrap
//     ErrInvalid.
//   - Options.EnableThinking / PreserveThinking take precedence over the same keys in Extra;
//     `enable_thinking is false` and `preserve_thinking is true` hold only for JSON booleans.
//
// # Parsing
//
// Parser (parser.go) inverts the assistant turn: reasoning up to </think>, then content, with
// <tool_call> blocks turned into tool calls whose arguments stream as JSON fragments. Decisions:
//
//   - Reasoning and content are trimmed of leading and trailing white space, as the template trims
//     them when the turn is rendered again; white space before a <tool_call> is dropped.
//   - Arguments keep the order in which the model wrote the parameters (the template renders
//     them in mapping order, so a round trip keeps the order); reordering to the schema would
//     mean holding every parameter back until the call ends.
//   - A parameter value is typed by the tool's schema; a value that does not fit its declared type
//     becomes a JSON string rather than being dropped.
//   - A <tool_call> that does not open with <function=NAME> naming a requested tool is content,
//     tags and all. Text between parameters is dropped. A call cut off after its name is closed at
//     Finish (a cut-off value is kept as far as it got), so its arguments are always valid JSON.
//   - Inside reasoning, only </think> is a tag: a <tool_call> there stays reasoning.
package chat
