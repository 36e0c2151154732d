package engine

import "strings"

// stopMatcher finds stop strings in streamed text. It releases text only when it can no longer be
// the start of a stop string, and never releases a stop string itself. One goroutine owns it.
type stopMatcher struct {
	stops   []string
	held    string
	include bool // a matched stop string is released with the text before it
}

// pass releases text without looking for stop strings (before min_tokens), with anything held.
func (m *stopMatcher) pass(text string) string {
	out := m.held + text
	m.held = ""
	return out
}

// add appends text and returns what may be released now; stopped is true when a stop string was
// found (the text before it is released, the stop string and everything after it dropped).
func (m *stopMatcher) add(text string) (out string, stopped bool) {
	if len(m.stops) == 0 {
		return text, false
	}
	buf := m.held + text
	first, end := -1, 0
	for _, s := range m.stops {
		if i := strings.Index(buf, s); i >= 0 && (first < 0 || i < first || i == first && i+len(s) > end) {
			first, end = i, i+len(s)
		}
	}
	if first >= 0 {
		m.held = ""
		if m.include {
			return buf[:end], true
		}
		return buf[:first], true
	}
	keep := 0
	for _, s := range m.stops {
		// The longest suffix of buf that is a proper prefix of s.
		for n := min(len(s)-1, len(buf)); n > keep; n-- {
			if strings.HasSuffix(buf, s[:n]) {
				keep = n
				break
			}
		}
	}
	m.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], false
}

// flush releases the held-back text at the end of generation.
func (m *stopMatcher) flush() string {
	s := m.held
	m.held = ""
	return s
}
