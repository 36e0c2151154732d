package tokenizer

import (
	"sort"
	"strings"
)

// addedToken is an entry of tokenizer.json's added_tokens.
type addedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// matcher finds added tokens in text: the leftmost match, and the longest one there, as Hugging Face's
// Aho-Corasick (LeftmostLongest) does. Added tokens are few, so candidates are indexed by first byte.
type matcher struct {
	first [256][]matchEntry // longest first
}

type matchEntry struct {
	content string
	id      int32
}

func newMatcher(tokens []addedToken) *matcher {
	m := &matcher{}
	for _, t := range tokens {
		c := t.Content[0]
		m.first[c] = append(m.first[c], matchEntry{t.Content, t.ID})
	}
	for i := range m.first {
		sort.SliceStable(m.first[i], func(a, b int) bool {
			return len(m.first[i][a].content) > len(m.first[i][b].content)
		})
	}
	return m
}

// find returns the first added token in s at or after byte from: its span and id, or ok false.
func (m *matcher) find(s string, from int) (start, end int, id int32, ok bool) {
	for i := from; i < len(s); i++ {
		for _, e := range m.first[s[i]] {
			if strings.HasPrefix(s[i:], e.content) {
				return i, i + len(e.content), e.id, true
			}
		}
	}
	return 0, 0, 0, false
}

// empty reports whether the matcher has no tokens.
func (m *matcher) empty() bool {
	for _, l := range m.first {
		if len(l) > 0 {
			return false
		}
	}
	return true
}
