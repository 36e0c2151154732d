package tokenizer

import "unicode/utf8"

// byteLevel is GPT-2's reversible map between bytes and printable characters, which byte-level BPE
// vocabularies are written in: bytes 0x21–0x7E, 0xA1–0xAC and 0xAE–0xFF stand for themselves and the
// other 68 bytes map, in increasing byte order, to U+0100, U+0101, … (space 0x20 → 'Ġ' U+0120).
type byteLevel struct {
	toRune [256]rune
	toByte [0x144]int16 // indexed by rune; -1 where the rune stands for no byte
}

func newByteLevel() *byteLevel {
	bl := &byteLevel{}
	for i := range bl.toByte {
		bl.toByte[i] = -1
	}
	next := rune(0x100)
	for b := 0; b < 256; b++ {
		if (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			bl.toRune[b] = rune(b)
		} else {
			bl.toRune[b] = next
			next++
		}
		bl.toByte[bl.toRune[b]] = int16(b)
	}
	return bl
}

// encode returns s written in the byte-level alphabet.
func (bl *byteLevel) encode(s string) string {
	out := make([]rune, 0, len(s))
	for i := 0; i < len(s); i++ {
		out = append(out, bl.toRune[s[i]])
	}
	return string(out)
}

// decode returns the bytes that token text tok stands for, following Hugging Face's ByteLevel decoder:
// when every character of tok is in the byte-level alphabet the bytes are mapped back, otherwise (an added
// token such as "<|im_start|>" is normally all ASCII and maps to itself) tok's own UTF-8 bytes are used.
func (bl *byteLevel) decode(tok string) []byte {
	out := make([]byte, 0, len(tok))
	for _, r := range tok {
		if r < 0 || int(r) >= len(bl.toByte) || bl.toByte[r] < 0 {
			return []byte(tok)
		}
		out = append(out, byte(bl.toByte[r]))
	}
	return out
}

// appendLossy appends b to dst as valid UTF-8, replacing each maximal invalid subpart (the longest prefix
// of a would-be valid sequence, or one bad byte) with U+FFFD. This is the substitution rule of Unicode
// §3.9, which Rust's String::from_utf8_lossy, WHATWG's TextDecoder and Python's "replace" all follow;
// Go's own conversions differ (one U+FFFD per bad byte, or per run).
func appendLossy(dst []byte, b []byte) []byte {
	for len(b) > 0 {
		if b[0] < utf8.RuneSelf {
			dst = append(dst, b[0])
			b = b[1:]
			continue
		}
		n, st := scanSeq(b)
		if st == seqComplete {
			dst = append(dst, b[:n]...)
		} else {
			dst = append(dst, "\uFFFD"...)
		}
		b = b[n:]
	}
	return dst
}

// seqStatus says what scanSeq found.
type seqStatus uint8

const (
	seqComplete  seqStatus = iota // a whole valid character
	seqInvalid                    // a maximal invalid subpart that no later byte can complete
	seqTruncated                  // a valid start of a character that b ends before
)

// scanSeq looks at the multi-byte sequence that starts b (b[0] >= 0x80) and returns its length: the whole
// character, the maximal invalid subpart (at least 1 byte), or the valid-so-far prefix that b cuts short.
func scanSeq(b []byte) (int, seqStatus) {
	lead := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xbf) // the allowed range of the second byte
	switch {
	case lead >= 0xc2 && lead <= 0xdf:
		need = 2
	case lead == 0xe0:
		need, lo = 3, 0xa0
	case lead == 0xed:
		need, hi = 3, 0x9f
	case lead >= 0xe1 && lead <= 0xef:
		need = 3
	case lead == 0xf0:
		need, lo = 4, 0x90
	case lead == 0xf4:
		need, hi = 4, 0x8f
	case lead >= 0xf1 && lead <= 0xf3:
		need = 4
	default:
		return 1, seqInvalid
	}
	for i := 1; i < need; i++ {
		if i >= len(b) {
			return i, seqTruncated
		}
		c := b[i]
		if i == 1 && (c < lo || c > hi) || i > 1 && (c < 0x80 || c > 0xbf) {
			return i, seqInvalid
		}
	}
	return need, seqComplete
}

// incompleteTail returns how many bytes at the end of b form the valid start of a character that later
// bytes could complete (0 to 3). A streaming decoder holds these back.
func incompleteTail(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < utf8.RuneSelf {
			return 0
		}
		if c < 0xc0 {
			continue // a continuation byte: its lead, if any, is further back
		}
		if n, st := scanSeq(b[len(b)-k:]); st == seqTruncated && n == k {
			return k
		}
		return 0
	}
	return 0
}

// toValidUTF8 returns s with each maximal invalid subpart replaced by U+FFFD (see appendLossy).
func toValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string(appendLossy(make([]byte, 0, len(s)+8), []byte(s)))
}
