package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lily-engine/lily/internal/safefile"
	"strings"
)

// maxID bounds token ids so that a corrupt file cannot make the loader allocate without limit.
const maxID = 1 << 20

// file is the part of tokenizer.json that lily reads.
type file struct {
	AddedTokens  []addedToken    `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	Model        struct {
		Type                    string           `json:"type"`
		Dropout                 *float64         `json:"dropout"`
		ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
		ByteFallback            bool             `json:"byte_fallback"`
		IgnoreMerges            bool             `json:"ignore_merges"`
		Vocab                   map[string]int32 `json:"vocab"`
		Merges                  json.RawMessage  `json:"merges"`
	} `json:"model"`
}

// component is a typed entry of tokenizer.json (normalizer, pre-tokenizer, decoder).
type component struct {
	Type           string          `json:"type"`
	Pretokenizers  []component     `json:"pretokenizers"`
	Pattern        json.RawMessage `json:"pattern"`
	Behavior       string          `json:"behavior"`
	Invert         bool            `json:"invert"`
	AddPrefixSpace bool            `json:"add_prefix_space"`
	UseRegex       bool            `json:"use_regex"`
}

// Load reads a tokenizer.json file, gzipped or not.
func Load(path string) (*Tokenizer, error) {
	data, err := safefile.ReadFile(path, maxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse builds a Tokenizer from the contents of a tokenizer.json file, gzipped or not. It accepts only
// what lily's model uses: NFC (or no) normalizer, the Split + ByteLevel pre-tokenizer with one of the known
// Qwen patterns, a byte-level BPE model and the ByteLevel decoder; anything else is an error. The
// post-processor is not applied: lily adds no BOS or EOS.
func Parse(data []byte) (*Tokenizer, error) {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("tokenizer: gzip: %w", err)
		}
		if data, err = safefile.ReadAll(zr, "tokenizer.json (gunzipped)", maxFileBytes); err != nil {
			return nil, fmt.Errorf("tokenizer: gzip: %w", err)
		}
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenizer: json: %w", err)
	}
	t, err := build(&f)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return t, nil
}

func build(f *file) (*Tokenizer, error) {
	t := &Tokenizer{bl: newByteLevel()}
	var err error
	if t.nfc, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if t.split, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if err := parseDecoder(f.Decoder); err != nil {
		return nil, err
	}
	if err := t.buildModel(f); err != nil {
		return nil, err
	}
	if err := t.buildAdded(f.AddedTokens); err != nil {
		return nil, err
	}
	return t, nil
}

func parseNormalizer(raw json.RawMessage) (nfc bool, err error) {
	if isNull(raw) {
		return false, nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return false, fmt.Errorf("normalizer: %w", err)
	}
	if c.Type != "NFC" {
		return false, fmt.Errorf("normalizer: unsupported type %q (want NFC or none)", c.Type)
	}
	return true, nil
}

func parsePreTokenizer(raw json.RawMessage) (splitter, error) {
	var c component
	if isNull(raw) {
		return splitter{}, errors.New("pre_tokenizer: missing (want Sequence[Split, ByteLevel])")
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return splitter{}, fmt.Errorf("pre_tokenizer: %w", err)
	}
	if c.Type != "Sequence" || len(c.Pretokenizers) != 2 || c.Pretokenizers[0].Type != "Split" ||
		c.Pretokenizers[1].Type != "ByteLevel" {
		return splitter{}, errors.New("pre_tokenizer: unsupported structure (want Sequence[Split, ByteLevel])")
	}
	sp, bl := c.Pretokenizers[0], c.Pretokenizers[1]
	if sp.Behavior != "Isolated" || sp.Invert {
		return splitter{}, fmt.Errorf("pre_tokenizer: Split behavior %q invert %v unsupported (want Isolated, false)", sp.Behavior, sp.Invert)
	}
	if bl.AddPrefixSpace || bl.UseRegex {
		return splitter{}, errors.New("pre_tokenizer: ByteLevel with add_prefix_space or use_regex is unsupported")
	}
	var pat struct{ Regex *string }
	if err := json.Unmarshal(sp.Pattern, &pat); err != nil || pat.Regex == nil {
		return splitter{}, fmt.Errorf("pre_tokenizer: Split pattern %s is not a regex", sp.Pattern)
	}
	return newSplitter(*pat.Regex)
}

func parseDecoder(raw json.RawMessage) error {
	var c component
	if isNull(raw) {
		return errors.New("decoder: missing (want ByteLevel)")
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("decoder: %w", err)
	}
	if c.Type != "ByteLevel" {
		return fmt.Errorf("decoder: unsupported type %q (want ByteLevel)", c.Type)
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// buildModel checks the BPE model and fills the vocabulary, the byte ids and the merges.
func (t *Tokenizer) buildModel(f *file) error {
	m := &f.Model
	switch {
	case m.Type != "BPE":
		return fmt.Errorf("model: unsupported type %q (want BPE)", m.Type)
	case m.Dropout != nil && *m.Dropout != 0:
		return errors.New("model: BPE dropout is unsupported")
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "",
		m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return errors.New("model: continuing_subword_prefix and end_of_word_suffix are unsupported")
	case m.ByteFallback:
		return errors.New("model: byte_fallback is unsupported (byte-level BPE has no unknown bytes)")
	case len(m.Vocab) == 0:
		return errors.New("model: empty vocabulary")
	}
	t.vocab = m.Vocab
	size := 0
	for tok, id := range m.Vocab {
		if id < 0 || id >= maxID {
			return fmt.Errorf("model: token %q has id %d out of range [0, %d)", tok, id, maxID)
		}
		size = max(size, int(id)+1)
	}
	t.tokens = make([]string, size)
	t.present = make([]bool, size)
	for tok, id := range m.Vocab {
		if t.present[id] {
			return fmt.Errorf("model: id %d used by both %q and %q", id, t.tokens[id], tok)
		}
		t.tokens[id], t.present[id] = tok, true
	}
	t.bpe = bpe{ignoreMerges: m.IgnoreMerges, vocab: m.Vocab, bl: t.bl}
	for b := 0; b < 256; b++ {
		id, ok := m.Vocab[string(t.bl.toRune[b])]
		if !ok {
			return fmt.Errorf("model: byte 0x%02x (%q) is not in the vocabulary", b, t.bl.toRune[b])
		}
		t.bpe.byteID[b] = id
	}
	pairs, err := parseMerges(m.Merges)
	if err != nil {
		return err
	}
	t.bpe.merges = make(map[uint64]merge, len(pairs))
	for rank, p := range pairs {
		a, okA := m.Vocab[p[0]]
		b, okB := m.Vocab[p[1]]
		id, okM := m.Vocab[p[0]+p[1]]
		if !okA || !okB || !okM {
			return fmt.Errorf("model: merge %d (%q %q) uses a token that is not in the vocabulary", rank, p[0], p[1])
		}
		t.bpe.merges[pairKey(a, b)] = merge{rank: int32(rank), id: id}
	}
	return nil
}

// parseMerges accepts both merge formats: [["a","b"], …] and ["a b", …].
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		return pairs, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, errors.New("model: merges are neither [[a, b], …] nor [\"a b\", …]")
	}
	pairs = make([][2]string, len(lines))
	for i, l := range lines {
		a, b, ok := strings.Cut(l, " ")
		if !ok || a == "" || b == "" || strings.Contains(b, " ") {
			return nil, fmt.Errorf("model: merge %d %q is not two tokens", i, l)
		}
		pairs[i] = [2]string{a, b}
	}
	return pairs, nil
}

// buildAdded records the added tokens and builds their matchers.
func (t *Tokenizer) buildAdded(added []addedToken) error {
	var raw, norm []addedToken
	t.added = make(map[string]int32, len(added))
	for _, a := range added {
		switch {
		case a.ID < 0 || a.ID >= maxID:
			return fmt.Errorf("added token %q: id %d out of range [0, %d)", a.Content, a.ID, maxID)
		case a.Content == "":
			return fmt.Errorf("added token %d: empty content", a.ID)
		case a.SingleWord || a.LStrip || a.RStrip:
			return fmt.Errorf("added token %q: single_word, lstrip and rstrip are unsupported", a.Content)
		}
		if _, dup := t.added[a.Content]; dup {
			return fmt.Errorf("added token %q appears twice", a.Content)
		}
		for int(a.ID) >= len(t.tokens) {
			t.tokens = append(t.tokens, "")
			t.present = append(t.present, false)
		}
		// An added token takes over the id's text, as in Hugging Face (its added vocabulary is asked first).
		t.tokens[a.ID], t.present[a.ID] = a.Content, true
		t.added[a.Content] = a.ID
		if a.Special {
			if t.special == nil {
				t.special = make(map[int32]bool)
			}
			t.special[a.ID] = true
		}
		if a.Normalized {
			// Matched against normalized text, so in normalized form, as Hugging Face does.
			if t.nfc {
				a.Content = nfc(a.Content)
			}
			norm = append(norm, a)
		} else {
			raw = append(raw, a)
		}
	}
	t.rawAdded, t.normAdded = newMatcher(raw), newMatcher(norm)
	t.decoded = make([][]byte, len(t.tokens))
	for id, tok := range t.tokens {
		if t.present[id] {
			t.decoded[id] = t.bl.decode(tok)
		}
	}
	return nil
}

// maxFileBytes bounds tokenizer.json (and its gunzipped form); Qwen's is about 11 MB.
const maxFileBytes = 256 << 20
