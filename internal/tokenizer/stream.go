package tokenizer

import "unicode/utf8"

// StreamDecoder turns ids into text one at a time, holding back the bytes of a character that later
// tokens may complete. The concatenation of everything Add returns followed by Flush equals Decode of
// all the ids. One goroutine owns a StreamDecoder.
type StreamDecoder struct {
	t           *Tokenizer
	skipSpecial bool
	held        []byte // the valid start of a character not yet complete (at most 3 bytes)
	buf         []byte
}

// NewDecoder returns a StreamDecoder; with skipSpecial, added tokens marked special produce no text.
func (t *Tokenizer) NewDecoder(skipSpecial bool) *StreamDecoder {
	return &StreamDecoder{t: t, skipSpecial: skipSpecial}
}

// Add appends the token id and returns the text it completes, which never ends inside a character.
// Invalid bytes are replaced by U+FFFD as soon as no later byte could make them valid. A non-negative id
// that no token has adds nothing (as in Decode); a negative id is an error and leaves the decoder
// unchanged.
func (d *StreamDecoder) Add(id int32) (string, error) {
	if id < 0 {
		return "", d.t.idError(id)
	}
	if d.skipSpecial && d.t.special[id] {
		return "", nil
	}
	tok := d.t.TokenBytes(id)
	if len(d.held) == 0 && utf8.Valid(tok) {
		return string(tok), nil // the common case: whole characters only
	}
	b := append(d.held, tok...)
	keep := incompleteTail(b)
	d.buf = appendLossy(d.buf[:0], b[:len(b)-keep])
	d.held = append(d.held[:0:0], b[len(b)-keep:]...)
	return string(d.buf), nil
}

// Flush returns the bytes held back, as U+FFFD since they do not form a character, and resets the
// decoder for reuse.
func (d *StreamDecoder) Flush() string {
	s := string(appendLossy(nil, d.held))
	d.held = d.held[:0]
	return s
}
