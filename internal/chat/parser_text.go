package chat

import (
	"strings"
	"unicode/utf8"
)

// scanTags finds the leftmost complete occurrence of any tag in s and returns its offset and the
// tag, or -1. safe is how much of s can be emitted as text: up to the tag, or, when none is
// complete, all but a suffix that could still grow into one. (No tag contains another, so the
// leftmost complete tag cannot be overtaken by a longer one that starts earlier.)
func scanTags(s string, tags ...string) (at int, tag string, safe int) {
	at = -1
	for _, t := range tags {
		if i := strings.Index(s, t); i >= 0 && (at < 0 || i < at) {
			at, tag = i, t
		}
	}
	if at >= 0 {
		return at, tag, at
	}
	safe = len(s)
	for _, t := range tags {
		for n := min(len(t)-1, len(s)); n > 0; n-- {
			if strings.HasSuffix(s, t[:n]) {
				safe = min(safe, len(s)-n)
				break
			}
		}
	}
	return -1, "", safe
}

// runeBoundary moves n back so that s[:n] does not end inside a UTF-8 character that s has not
// finished yet (the rest of it may be in the next chunk).
func runeBoundary(s string, n int) int {
	if n != len(s) {
		return n // s[n] starts a tag, which is ASCII
	}
	for i := n - 1; i >= 0 && i >= n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:n]) {
				return i
			}
			break
		}
	}
	return n
}

// emitReasoning sends reasoning text without its leading white space and holding back trailing
// white space until more reasoning follows (the template trims reasoning).
func (p *Parser) emitReasoning(s string) {
	if out := trimStream(s, &p.started, &p.pendingWS); out != "" {
		if n := len(p.out); n > 0 && p.out[n-1].ToolCall == nil && p.out[n-1].Content == "" {
			p.out[n-1].Reasoning += out
			return
		}
		p.out = append(p.out, Delta{Reasoning: out})
	}
}

// emitContent is emitReasoning for content.
func (p *Parser) emitContent(s string) {
	if out := trimStream(s, &p.contentStarted, &p.contentWS); out != "" {
		if n := len(p.out); n > 0 && p.out[n-1].ToolCall == nil && p.out[n-1].Reasoning == "" {
			p.out[n-1].Content += out
			return
		}
		p.out = append(p.out, Delta{Content: out})
	}
}

// emitTool sends a tool-call delta, merged into the previous one when it continues the same call.
func (p *Parser) emitTool(d ToolCallDelta) {
	if n := len(p.out); n > 0 && p.out[n-1].ToolCall != nil && p.out[n-1].ToolCall.Index == d.Index && d.Name == "" {
		p.out[n-1].ToolCall.Arguments += d.Arguments
		return
	}
	p.out = append(p.out, Delta{ToolCall: &d})
}

// trimStream returns what of s can be emitted now so that the emitted text, summed over calls, is
// the whole stream with leading and trailing (Python) white space removed. started records that
// non-space text was seen; pending holds trailing white space not yet known to be interior.
func trimStream(s string, started *bool, pending *string) string {
	if !*started {
		s = pyTrimLeft(s)
		if s == "" {
			return ""
		}
		*started = true
	}
	body := pyTrimRight(s)
	if body == "" {
		*pending += s
		return ""
	}
	out := *pending + body
	*pending = s[len(body):]
	return out
}
