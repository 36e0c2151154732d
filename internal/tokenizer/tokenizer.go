// Package tokenizer is the byte-level BPE tokenizer of Qwen3.6 (and Qwen2/Qwen3), loaded from a Hugging
// Face tokenizer.json and matching the `tokenizers` library id for id.
//
// Encoding: split the text on added tokens (special or not, leftmost then longest match), NFC-normalize
// each remaining span, split it with the pre-tokenizer pattern, map bytes to the GPT-2 byte alphabet and
// merge by rank. No BOS or EOS is added. Text that is not valid UTF-8 has each maximal invalid subpart
// replaced by U+FFFD first, as a JavaScript or Python caller's decoder would.
//
// Decoding concatenates the tokens' bytes and replaces invalid UTF-8 with U+FFFD the way Hugging Face does;
// StreamDecoder does the same token by token without ever splitting a character.
package tokenizer

import (
	"errors"
	"fmt"
)

// ErrUnknownID is wrapped by the errors of Decode and StreamDecoder.Add for a negative id.
var ErrUnknownID = errors.New("tokenizer: unknown token id")

// Tokenizer encodes text to token ids and back. It is immutable after Load or Parse and safe for
// concurrent use.
type Tokenizer struct {
	bl        *byteLevel
	nfc       bool
	split     splitter
	bpe       bpe
	vocab     map[string]int32 // base vocabulary, byte-level text → id
	added     map[string]int32 // added tokens, content → id
	tokens    []string         // id → text as stored ("" where no token has the id)
	present   []bool           // id → whether a token has it
	decoded   [][]byte         // id → the bytes it decodes to
	special   map[int32]bool   // ids of added tokens marked special
	rawAdded  *matcher         // added tokens matched on the raw text (normalized: false)
	normAdded *matcher         // added tokens matched after normalization (normalized: true)
}

// VocabSize returns the highest token id plus one. Some ids below it may have no token.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// TokenID returns the id of a token given as stored: an added token's content, or a base token in the
// byte-level alphabet (a leading space is "Ġ"). Added tokens are looked up first.
func (t *Tokenizer) TokenID(token string) (int32, bool) {
	if id, ok := t.added[token]; ok {
		return id, true
	}
	id, ok := t.vocab[token]
	return id, ok
}

// Token returns the token's text as stored in tokenizer.json (byte-level alphabet for base tokens).
func (t *Tokenizer) Token(id int32) (string, bool) {
	if !t.valid(id) {
		return "", false
	}
	return t.tokens[id], true
}

// IsSpecial reports whether id is an added token marked special, which Decode skips on request.
func (t *Tokenizer) IsSpecial(id int32) bool { return t.special[id] }

// TokenBytes returns the bytes id decodes to (nil for an id that no token has). The caller must not
// modify them.
func (t *Tokenizer) TokenBytes(id int32) []byte {
	if !t.valid(id) {
		return nil
	}
	return t.decoded[id]
}

func (t *Tokenizer) valid(id int32) bool { return id >= 0 && int(id) < len(t.tokens) && t.present[id] }

// Encode returns the token ids of text. It never fails: every byte string has an encoding.
func (t *Tokenizer) Encode(text string) []int32 {
	text = toValidUTF8(text)
	sc := &scratch{cache: make(map[string][]int32)}
	out := make([]int32, 0, len(text)/3+1)
	for pos := 0; pos < len(text); {
		start, end, id, ok := t.rawAdded.find(text, pos)
		if !ok {
			start, end = len(text), len(text)
		}
		out = t.encodeNormalized(out, text[pos:start], sc)
		if ok {
			out = append(out, id)
		}
		pos = end
	}
	return out
}

// encodeNormalized encodes a span without raw-matched added tokens: normalize it, split it on the
// added tokens that match normalized text, and run the pre-tokenizer and BPE on the rest.
func (t *Tokenizer) encodeNormalized(out []int32, s string, sc *scratch) []int32 {
	if s == "" {
		return out
	}
	if t.nfc {
		s = nfc(s)
	}
	if t.normAdded.empty() {
		return t.encodeSpan(out, s, sc)
	}
	for pos := 0; pos < len(s); {
		start, end, id, ok := t.normAdded.find(s, pos)
		if !ok {
			start, end = len(s), len(s)
		}
		out = t.encodeSpan(out, s[pos:start], sc)
		if ok {
			out = append(out, id)
		}
		pos = end
	}
	return out
}

// encodeSpan pre-tokenizes s and appends the BPE ids of each piece.
func (t *Tokenizer) encodeSpan(out []int32, s string, sc *scratch) []int32 {
	for i := 0; i < len(s); {
		j := t.split.next(s, i)
		out = t.bpe.appendWord(out, s[i:j], sc)
		i = j
	}
	return out
}

// Decode returns the text of ids: the tokens' bytes concatenated, with each maximal invalid UTF-8 subpart
// replaced by U+FFFD. With skipSpecial, added tokens marked special are left out. A non-negative id that
// no token has decodes as nothing, as Hugging Face does: the model's embedding rows are padded past the
// tokenizer, and a model can generate such an id. A negative id is an error.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) (string, error) {
	var b []byte
	for _, id := range ids {
		if id < 0 {
			return "", t.idError(id)
		}
		if skipSpecial && t.special[id] {
			continue
		}
		b = append(b, t.TokenBytes(id)...)
	}
	return string(appendLossy(make([]byte, 0, len(b)), b)), nil
}

func (t *Tokenizer) idError(id int32) error {
	return fmt.Errorf("%w %d (vocabulary size %d)", ErrUnknownID, id, len(t.tokens))
}
