package chat

import (
	"fmt"
	"strings"
)

// message writes msgs[i] as the template's main loop does.
func (r *renderer) message(msgs []*value, i int, m *value, lastQuery int, preserveThinking bool) error {
	content, err := r.trimmedContent(m, true, false)
	if err != nil {
		return err
	}
	switch {
	case roleIs(m, "system"):
		if i != 0 {
			return raise("System message must be at the beginning.")
		}
	case roleIs(m, "user"):
		r.sb.WriteString("<|im_start|>user\n" + content + "<|im_end|>\n")
	case roleIs(m, "assistant"):
		return r.assistant(m, content, i > lastQuery || preserveThinking)
	case roleIs(m, "tool"):
		// loop.previtem is undefined for the first message, so a leading tool message opens no turn.
		if i > 0 && !roleIs(msgs[i-1], "tool") {
			r.sb.WriteString("<|im_start|>user")
		}
		r.sb.WriteString("\n<tool_response>\n" + content + "\n</tool_response>")
		if i == len(msgs)-1 || !roleIs(msgs[i+1], "tool") {
			r.sb.WriteString("<|im_end|>\n")
		}
	default:
		return raise("Unexpected message role.")
	}
	return nil
}

// assistant writes an assistant turn. content is already rendered and trimmed.
func (r *renderer) assistant(m *value, content string, showReasoning bool) error {
	reasoning := ""
	if rc := m.get("reasoning_content"); rc.isString() {
		reasoning = rc.str
	} else if strings.Contains(content, "</think>") {
		before, _, _ := strings.Cut(content, "</think>")
		before = strings.TrimRight(before, "\n")
		if j := strings.LastIndex(before, "<think>"); j >= 0 {
			before = before[j+len("<think>"):]
		}
		reasoning = strings.TrimLeft(before, "\n")
		content = strings.TrimLeft(content[strings.LastIndex(content, "</think>")+len("</think>"):], "\n")
	}
	reasoning = pyTrim(reasoning)
	r.sb.WriteString("<|im_start|>assistant\n")
	if showReasoning {
		r.sb.WriteString("<think>\n" + reasoning + "\n</think>\n\n")
	}
	r.sb.WriteString(content)
	// The template skips tool_calls that are not a non-empty list, except a non-empty string, whose
	// characters it would iterate and fail on.
	calls := m.get("tool_calls")
	if calls.isString() && calls.str != "" {
		return fmt.Errorf("tool_calls: a JSON string, want an array")
	}
	if calls != nil && calls.kind == kArray {
		for j, tc := range calls.arr {
			if err := r.toolCall(tc, j == 0, pyTrim(content) != ""); err != nil {
				return fmt.Errorf("tool_calls[%d]: %w", j, err)
			}
		}
	}
	r.sb.WriteString("<|im_end|>\n")
	return nil
}

// toolCall writes one <tool_call> block. An OpenAI call {"type":"function","function":{…}} is
// unwrapped to its function, as the template does when `function` is defined.
func (r *renderer) toolCall(tc *value, first, hasContent bool) error {
	if tc.kind != kObject {
		return fmt.Errorf("a JSON %s, want an object", kindName(tc.kind))
	}
	if tc.has("function") {
		tc = tc.get("function")
		if tc.kind != kObject {
			return fmt.Errorf("function: a JSON %s, want an object", kindName(tc.kind))
		}
	}
	name := tc.get("name")
	if !name.isString() {
		return fmt.Errorf("function name missing or not a string")
	}
	switch {
	case !first:
		r.sb.WriteString("\n")
	case hasContent:
		r.sb.WriteString("\n\n")
	}
	r.sb.WriteString("<tool_call>\n<function=" + name.str + ">\n")
	if tc.has("arguments") {
		args, err := argumentsMapping(tc.get("arguments"))
		if err != nil {
			return err
		}
		for k, key := range args.keys {
			r.sb.WriteString("<parameter=" + key + ">\n")
			if v := args.vals[k]; v.kind == kString {
				r.sb.WriteString(v.str)
			} else if err := dumpJSON(&r.sb, v); err != nil {
				return fmt.Errorf("argument %q: %w", key, err)
			}
			r.sb.WriteString("\n</parameter>\n")
		}
	}
	r.sb.WriteString("</function>\n</tool_call>")
	return nil
}

// argumentsMapping returns the arguments object. The OpenAI API sends arguments as a string that
// holds a JSON object; it is parsed (keeping key order) since the template iterates a mapping.
func argumentsMapping(v *value) (*value, error) {
	if v.kind == kString {
		parsed, err := decodeValue([]byte(v.str))
		if err != nil {
			return nil, fmt.Errorf("arguments string is not JSON: %w", err)
		}
		v = parsed
	}
	if v.kind != kObject {
		return nil, fmt.Errorf("arguments: a JSON %s, want an object (or a string holding one)", kindName(v.kind))
	}
	return v, nil
}
