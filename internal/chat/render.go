package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every error Render returns: the messages or tools cannot be rendered,
// which is the client's fault (HTTP 400).
var ErrInvalid = errors.New("invalid chat input")

// TemplateError is an error the chat template itself raises (its raise_exception calls).
// Message is the template's text, unchanged, e.g. "No user query found in messages.".
type TemplateError struct{ Message string }

// Error returns the template's message.
func (e *TemplateError) Error() string { return e.Message }

// Unwrap makes a TemplateError match ErrInvalid.
func (e *TemplateError) Unwrap() error { return ErrInvalid }

func raise(msg string) error { return &TemplateError{Message: msg} }

// Options are the template variables besides messages and tools.
type Options struct {
	// AddGenerationPrompt appends the assistant header and the opening of the thinking block.
	AddGenerationPrompt bool
	// EnableThinking is the template's enable_thinking; nil leaves it undefined (thinking on).
	EnableThinking *bool
	// PreserveThinking is Qwen3.6's preserve_thinking; nil leaves it undefined (old reasoning dropped).
	PreserveThinking *bool
	// Extra holds the other chat_template_kwargs as raw JSON. The template reads enable_thinking and
	// preserve_thinking (used when the fields above are nil) and add_vision_id; other keys are ignored.
	Extra map[string]json.RawMessage
}

// renderer holds the state of one Render call (the template's namespaces).
type renderer struct {
	sb             strings.Builder
	images, videos int
	addVisionID    bool
}

// Render renders messages (a JSON array of OpenAI chat messages) and tools (a JSON array of tool
// definitions; nil, empty or null for none) into the prompt text the Qwen3.6 chat template produces
// under transformers' apply_chat_template, byte for byte.
//
// Tool-call arguments may be a JSON object (the template's mapping) or, as the OpenAI API sends
// them, a string holding a JSON object; such a string is parsed and rendered as that object. Any
// other arguments value is an error (the template's |items filter would raise).
//
// Every error wraps ErrInvalid; errors the template raises are *TemplateError with its message.
// Render is safe for concurrent use.
func Render(messages, tools json.RawMessage, opt Options) (string, error) {
	s, err := render(messages, tools, opt)
	if err != nil && !errors.Is(err, ErrInvalid) {
		err = fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return s, err
}

func render(rawMessages, rawTools json.RawMessage, opt Options) (string, error) {
	msgs, err := decodeMessages(rawMessages)
	if err != nil {
		return "", err
	}
	toolList, err := decodeTools(rawTools)
	if err != nil {
		return "", err
	}
	enableThinkingFalse, preserveThinking, addVisionID, err := templateFlags(opt)
	if err != nil {
		return "", err
	}
	r := &renderer{addVisionID: addVisionID}
	if len(msgs) == 0 {
		return "", raise("No messages provided.")
	}
	if err := r.header(msgs[0], toolList); err != nil {
		return "", err
	}
	lastQuery, err := r.lastQueryIndex(msgs)
	if err != nil {
		return "", err
	}
	for i, m := range msgs {
		if err := r.message(msgs, i, m, lastQuery, preserveThinking); err != nil {
			return "", err
		}
	}
	if opt.AddGenerationPrompt {
		r.sb.WriteString("<|im_start|>assistant\n")
		if enableThinkingFalse {
			r.sb.WriteString("<think>\n\n</think>\n\n")
		} else {
			r.sb.WriteString("<think>\n")
		}
	}
	return r.sb.String(), nil
}

// decodeMessages parses the messages array; null or absent is an empty list.
func decodeMessages(raw json.RawMessage) ([]*value, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return nil, nil
	}
	v, err := decodeValue(raw)
	if err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	switch v.kind {
	case kNull:
		return nil, nil
	case kArray:
	default:
		return nil, fmt.Errorf("messages: a JSON %s, want an array", kindName(v.kind))
	}
	for i, m := range v.arr {
		if m.kind != kObject {
			return nil, fmt.Errorf("messages[%d]: a JSON %s, want an object", i, kindName(m.kind))
		}
	}
	return v.arr, nil
}

// decodeTools parses the tools array; null, absent or empty means no tools.
func decodeTools(raw json.RawMessage) ([]*value, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return nil, nil
	}
	v, err := decodeValue(raw)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	switch v.kind {
	case kNull:
		return nil, nil
	case kArray:
		return v.arr, nil
	}
	return nil, fmt.Errorf("tools: a JSON %s, want an array", kindName(v.kind))
}

// templateFlags evaluates `enable_thinking is false`, `preserve_thinking is true` and the
// truthiness of add_vision_id. The Jinja tests `is false` / `is true` hold only for the booleans
// themselves, so a JSON 0 or "false" in Extra does not count.
func templateFlags(opt Options) (enableFalse, preserve, visionID bool, err error) {
	extra := func(name string) (*value, error) {
		raw, ok := opt.Extra[name]
		if !ok {
			return nil, nil
		}
		v, err := decodeValue(raw)
		if err != nil {
			return nil, fmt.Errorf("chat_template_kwargs %s: %w", name, err)
		}
		return v, nil
	}
	if opt.EnableThinking != nil {
		enableFalse = !*opt.EnableThinking
	} else if v, err := extra("enable_thinking"); err != nil {
		return false, false, false, err
	} else if v != nil {
		enableFalse = v.kind == kBool && !v.b
	}
	if opt.PreserveThinking != nil {
		preserve = *opt.PreserveThinking
	} else if v, err := extra("preserve_thinking"); err != nil {
		return false, false, false, err
	} else if v != nil {
		preserve = v.kind == kBool && v.b
	}
	v, err := extra("add_vision_id")
	if err != nil {
		return false, false, false, err
	}
	return enableFalse, preserve, truthy(v), nil
}

// truthy is Python truthiness of a JSON value; nil (undefined) is false.
func truthy(v *value) bool {
	if v == nil {
		return false
	}
	switch v.kind {
	case kBool:
		return v.b
	case kNumber:
		s, err := pyNumber(v.num)
		return err == nil && s != "0" && s != "0.0" && s != "-0.0"
	case kString:
		return v.str != ""
	case kArray:
		return len(v.arr) > 0
	case kObject:
		return len(v.keys) > 0
	}
	return false
}

// roleIs is the template's `message.role == name`.
func roleIs(m *value, name string) bool {
	r := m.get("role")
	return r != nil && r.kind == kString && r.str == name
}

// trimmedContent is `render_content(message.content, countVision, isSystem)|trim`.
func (r *renderer) trimmedContent(m *value, countVision, isSystem bool) (string, error) {
	s, err := r.renderContent(m.get("content"), countVision, isSystem)
	return pyTrim(s), err
}

// header writes the system turn: the tool block when tools are given, and the first message's
// content when it is a system message.
func (r *renderer) header(first *value, tools []*value) error {
	if len(tools) > 0 {
		r.sb.WriteString("<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>")
		for i, t := range tools {
			r.sb.WriteByte('\n')
			if err := dumpJSON(&r.sb, t); err != nil {
				return fmt.Errorf("tools[%d]: %w", i, err)
			}
		}
		r.sb.WriteString("\n</tools>")
		r.sb.WriteString(toolInstructions)
		if roleIs(first, "system") {
			content, err := r.trimmedContent(first, false, true)
			if err != nil {
				return err
			}
			if content != "" {
				r.sb.WriteString("\n\n" + content)
			}
		}
		r.sb.WriteString("<|im_end|>\n")
		return nil
	}
	if roleIs(first, "system") {
		content, err := r.trimmedContent(first, false, true)
		if err != nil {
			return err
		}
		r.sb.WriteString("<|im_start|>system\n" + content + "<|im_end|>\n")
	}
	return nil
}

// toolInstructions follows the </tools> list in the system turn.
const toolInstructions = "\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n" +
	"<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n" +
	"<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n" +
	"</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n" +
	"- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n" +
	"- Required parameters MUST be specified\n" +
	"- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n" +
	"- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n" +
	"</IMPORTANT>"

// lastQueryIndex is the template's backwards scan: the index of the last user message whose
// trimmed content is not a tool response wrapped in <tool_response>…</tool_response>.
func (r *renderer) lastQueryIndex(msgs []*value) (int, error) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if !roleIs(msgs[i], "user") {
			continue
		}
		content, err := r.trimmedContent(msgs[i], false, false)
		if err != nil {
			return 0, err
		}
		if !(strings.HasPrefix(content, "<tool_response>") && strings.HasSuffix(content, "</tool_response>")) {
			return i, nil
		}
	}
	return 0, raise("No user query found in messages.")
}
