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
	marks bool // Qwen3.6: \p{M} joins letters and leaves the punctuation class
}

func newSplitter(pattern string) (splitter, error) {
	switch pattern {
	case patternQwen2:
		return splitter{marks: false}, nil
	case patternQwen36:
		return splitter{marks: true}, nil
	}
	return splitter{}, fmt.Errorf("pre-tokenizer: unknown Split regex %q (lily supports only the Qwen2/Qwen3 and Qwen3.6 patterns)", pattern)
}

// Character classes of the pattern.
func isSpace(r rune) bool { // \s: White_Space, which is what the reference engine's \s is for Unicode
	if r < utf8.RuneSelf {
		return r == ' ' || r >= '\t' && r <= '\r'
	}
	return unicode.IsSpace(r)
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return r|0x20 >= 'a' && r|0x20 <= 'z'
	}
	return unicode.IsLetter(r)
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9'
	}
	return unicode.IsNumber(r)
}

func isMark(r rune) bool { return r >= 0x300 && unicode.IsMark(r) }

// word reports whether r belongs to the letter run: \p{L}, or [\p{L}\p{M}] for Qwen3.6.
func (sp splitter) word(r rune) bool { return isLetter(r) || sp.marks && isMark(r) }

// punct reports whether r belongs to the punctuation run: [^\s\p{L}\p{N}], or [^\s\p{L}\p{M}\p{N}].
func (sp splitter) punct(r rune) bool {
	return !isSpace(r) && !isLetter(r) && !isNumber(r) && !(sp.marks && isMark(r))
}

// wordPrefix reports whether r may stand before a letter run: [^\r\n\p{L}\p{N}] (marks included).
func wordPrefix(r rune) bool { return r != '\r' && r != '\n' && !isLetter(r) && !isNumber(r) }

// next returns the end of the piece that starts at s[i:] (i < len(s), s valid UTF-8).
func (sp splitter) next(s string, i int) int {
	r0, w0 := utf8.DecodeRuneInString(s[i:])
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if r0 == '\'' {
		if n := contraction(s[i+1:]); n > 0 {
			return i + 1 + n
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+ (with \p{M} in the run for Qwen3.6)
	start := -1
	if sp.word(r0) {
		start = i
	} else if wordPrefix(r0) && i+w0 < len(s) {
		if r1, _ := utf8.DecodeRuneInString(s[i+w0:]); sp.word(r1) {
			start = i + w0
		}
	}
	if start >= 0 {
		return sp.run(s, start, sp.word)
	}
	// \p{N}
	if isNumber(r0) {
		return i + w0
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	j := i
	if r0 == ' ' && i+1 < len(s) {
		if r1, _ := utf8.DecodeRuneInString(s[i+1:]); sp.punct(r1) {
			j = i + 1
		}
	}
	if r, _ := utf8.DecodeRuneInString(s[j:]); sp.punct(r) {
		j = sp.run(s, j, sp.punct)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	if !isSpace(r0) {
		return i + w0 // unreachable: every other character is whitespace
	}
	// The whitespace run s[i:end] and the start of its last character.
	end, last, lastNL := i, i, -1
	for end < len(s) {
		r, w := utf8.DecodeRuneInString(s[end:])
		if !isSpace(r) {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = end
		}
		last = end
		end += w
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

// run returns the end of the run of characters from s[j:] that satisfy in.
func (sp splitter) run(s string, j int, in func(rune) bool) int {
	for j < len(s) {
		if c := s[j]; c < utf8.RuneSelf {
			if !in(rune(c)) {
				break
			}
			j++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[j:])
		if !in(r) {
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
