package tokenizer

import (
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// cgj is U+034F COMBINING GRAPHEME JOINER, which x/text's normalizer inserts into runs of more than 30
// non-starters (the Unicode Stream-Safe Text Format). Hugging Face's NFC does not, so lily must not either.
const cgj = "\u034f"

// nfc returns the NFC form of s (valid UTF-8), exactly as Unicode defines it.
func nfc(s string) string {
	if norm.NFC.IsNormalString(s) {
		return s
	}
	out := norm.NFC.String(s)
	if strings.Count(out, cgj) == strings.Count(s, cgj) {
		return out
	}
	return nfcUnbounded(s)
}

// nfcUnbounded is the plain Unicode NFC algorithm with no limit on runs of non-starters: full canonical
// decomposition, canonical ordering, then canonical composition. It uses x/text only on single characters
// and pairs, where the stream-safe limit cannot apply. It is slow and runs only on text with such runs.
func nfcUnbounded(s string) string {
	var rs []rune
	for _, r := range s {
		if r < utf8.RuneSelf {
			rs = append(rs, r)
		} else {
			rs = append(rs, []rune(norm.NFD.String(string(r)))...)
		}
	}
	ccc := func(r rune) uint8 { return norm.NFD.PropertiesString(string(r)).CCC() }
	// Canonical ordering: sort every run of non-starters by combining class, stably.
	for i := 0; i < len(rs); {
		if ccc(rs[i]) == 0 {
			i++
			continue
		}
		j := i
		for j < len(rs) && ccc(rs[j]) != 0 {
			j++
		}
		slices.SortStableFunc(rs[i:j], func(a, b rune) int { return int(ccc(a)) - int(ccc(b)) })
		i = j
	}
	// Canonical composition: a character joins the last starter unless a character between them is a
	// starter or has a combining class at least its own (in canonical order, the last one tells).
	out := rs[:0]
	starter, lastCCC := -1, uint8(0)
	for _, c := range rs {
		cc := ccc(c)
		if starter >= 0 && (len(out)-1 == starter || lastCCC != 0 && lastCCC < cc) {
			if p, ok := compose(out[starter], c); ok {
				out[starter] = p
				continue
			}
		}
		if cc == 0 {
			starter = len(out)
		}
		out = append(out, c)
		lastCCC = cc
	}
	return string(out)
}

// compose returns the primary composite of a and b, if there is one.
func compose(a, b rune) (rune, bool) {
	p := norm.NFC.String(string([]rune{a, b}))
	if r, n := utf8.DecodeRuneInString(p); n == len(p) && r != utf8.RuneError {
		return r, true
	}
	return 0, false
}
