package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The two Split pre-tokenizer patterns lily knows. Qwen3.6 adds \p{M} (combining marks) to the letter run
// and removes it from the punctuation run; nothing else differs.
const (
	patternQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

	patternQwen36 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// splitter is a hand-written matcher for the known patterns, with the leftmost-first, backtracking
// semantics of the regex engine Hugging Face uses (Go's regexp has no lookahead). Every character is
// matched by some alternative, so the pieces tile the text.
type splitter struct {
	cls *classes
	// Class masks of the pattern's sets; Qwen3.6 puts \p{M} in the letter run and out of punctuation.
	wordIn    uint8 // \p{L}+ or [\p{L}\p{M}]+: in the set if any bit is set
	punctOut  uint8 // [^\s\p{L}\p{N}]+ or [^\s\p{L}\p{M}\p{N}]+: in the set if no bit is set
	prefixOut uint8 // [^\r\n\p{L}\p{N}]: in the set if no bit is set
}

func newSplitter(pattern string) (splitter, error) {
	sp := splitter{cls: newClasses(), wordIn: clsLetter, punctOut: clsSpace | clsLetter | clsNumber,
		prefixOut: clsNewline | clsLetter | clsNumber}
	switch pattern {
	case patternQwen2:
		return sp, nil
	case patternQwen36:
		sp.wordIn |= clsMark
		sp.punctOut |= clsMark
		return sp, nil
	}
	return splitter{}, fmt.Errorf("pre-tokenizer: unknown Split regex %q (lily supports only the Qwen2/Qwen3 and Qwen3.6 patterns)", pattern)
}

// Character classes of the pattern, as bits.
const (
	clsLetter  = 1 << iota // \p{L}
	clsNumber              // \p{N}
	clsMark                // \p{M}
	clsSpace               // \s: White_Space, which is what the reference engine's \s means for Unicode
	clsNewline             // \r or \n
)

// classes holds the class bits of every character of the Basic Multilingual Plane; others are looked up.
type classes struct {
	bmp [0x10000]uint8
}

func newClasses() *classes {
	c := &classes{}
	for r := range rune(len(c.bmp)) {
		c.bmp[r] = classify(r)
	}
	return c
}

func classify(r rune) uint8 {
	var b uint8
	if unicode.IsLetter(r) {
		b |= clsLetter
	}
	if unicode.IsNumber(r) {
		b |= clsNumber
	}
	if unicode.IsMark(r) {
		b |= clsMark
	}
	if unicode.IsSpace(r) {
		b |= clsSpace
	}
	if r == '\r' || r == '\n' {
		b |= clsNewline
	}
	return b
}

// at returns the first character of s, its width and its class bits (s not empty).
func (c *classes) at(s string) (rune, int, uint8) {
	if s[0] < utf8.RuneSelf {
		return rune(s[0]), 1, c.bmp[s[0]]
	}
	r, w := utf8.DecodeRuneInString(s)
	if r < 0x10000 {
		return r, w, c.bmp[r]
	}
	return r, w, classify(r)
}

// next returns the end of the piece that starts at s[i:] (i < len(s), s valid UTF-8).
func (sp splitter) next(s string, i int) int {
	r0, w0, c0 := sp.cls.at(s[i:])
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if r0 == '\'' {
		if n := contraction(s[i+1:]); n > 0 {
			return i + 1 + n
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+ (with \p{M} in the run for Qwen3.6)
	if c0&sp.wordIn != 0 {
		return sp.runIn(s, i+w0, sp.wordIn)
	}
	if c0&sp.prefixOut == 0 && i+w0 < len(s) {
		if _, w1, c1 := sp.cls.at(s[i+w0:]); c1&sp.wordIn != 0 {
			return sp.runIn(s, i+w0+w1, sp.wordIn)
		}
	}
	// \p{N}
	if c0&clsNumber != 0 {
		return i + w0
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	j := i
	if r0 == ' ' && i+1 < len(s) {
		if _, _, c1 := sp.cls.at(s[i+1:]); c1&sp.punctOut == 0 {
			j = i + 1
		}
	}
	if _, w, c := sp.cls.at(s[j:]); c&sp.punctOut == 0 {
		j = sp.runOut(s, j+w, sp.punctOut)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	// What is left is whitespace: the run s[i:end], the start of its last character and of its last newline.
	end, last, lastNL := i, i, -1
	for end < len(s) {
		_, w, c := sp.cls.at(s[end:])
		if c&clsSpace == 0 {
			break
		}
		if c&clsNewline != 0 {
			lastNL = end
		}
		last = end
		end += w
	}
	if end == i {
		return i + w0 // unreachable: every character is in one of the sets above
	}
	// \s*[\r\n]+ : backtracking stops at the run's last newline.
	if lastNL >= 0 {
		return lastNL + 1
	}
	// \s+(?!\S) : the whole run at the end of the text, else the run less its last character.
	if end == len(s) {
		return end
	}
	if last > i {
		return last
	}
	// \s+ : a single whitespace character before a non-space.
	return end
}

// runIn returns the end of the run of characters from s[j:] with a class bit in mask.
func (sp splitter) runIn(s string, j int, mask uint8) int {
	for j < len(s) {
		_, w, c := sp.cls.at(s[j:])
		if c&mask == 0 {
			break
		}
		j += w
	}
	return j
}

// runOut returns the end of the run of characters from s[j:] with no class bit in mask.
func (sp splitter) runOut(s string, j int, mask uint8) int {
	for j < len(s) {
		_, w, c := sp.cls.at(s[j:])
		if c&mask != 0 {
			break
		}
		j += w
	}
	return j
}

// contraction returns the length of the contraction suffix (s, t, re, ve, m, ll, d in any case) that
// starts s, or 0. The reference engine folds case with Unicode rules, so 'ſ' (U+017F) matches 's' too.
func contraction(s string) int {
	if strings.HasPrefix(s, "ſ") {
		return len("ſ")
	}
	lower := func(k int) byte { // s[k] in lower case if it is an ASCII letter, else 0
		if k < len(s) && (s[k]|0x20) >= 'a' && (s[k]|0x20) <= 'z' {
			return s[k] | 0x20
		}
		return 0
	}
	switch lower(0) {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v':
		if lower(1) == 'e' {
			return 2
		}
	case 'l':
		if lower(1) == 'l' {
			return 2
		}
	}
	return 0
}
