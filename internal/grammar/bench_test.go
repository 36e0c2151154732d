package grammar

import (
	"math/rand/v2"
	"testing"
)

// realVocab is the real model's logits length; synthVocab builds a byte-level vocabulary of that
// size (all 256 bytes, then words of 2–12 bytes: mostly ASCII with a leading space, some
// punctuation runs and some multi-byte UTF-8), shaped like a BPE vocabulary without shipping one.
const realVocab = 248320

func synthVocab(n int) [][]byte {
	r := rand.New(rand.NewPCG(7, 8))
	toks := make([][]byte, 0, n)
	for c := range 256 {
		toks = append(toks, []byte{byte(c)})
	}
	const letters = "etaoinshrdlucmfwypvbgkjqxzETAOINSHRDLU"
	const punct = `{}[]",:.;!?()-_/\'0123456789`
	cjk := []rune("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年")
	for len(toks) < n {
		var b []byte
		switch k := r.IntN(10); {
		case k < 7:
			if r.IntN(2) == 0 {
				b = append(b, ' ')
			}
			for range 1 + r.IntN(10) {
				b = append(b, letters[r.IntN(len(letters))])
			}
		case k < 9:
			for range 2 + r.IntN(4) {
				b = append(b, punct[r.IntN(len(punct))])
			}
		default:
			for range 1 + r.IntN(3) {
				b = append(b, string(cjk[r.IntN(len(cjk))])...)
			}
		}
		toks = append(toks, b)
	}
	return toks
}

// BenchmarkMask measures the token mask on a 248,320-id vocabulary: cold (the state seen for the
// first time: one pass over the sorted vocabulary) inside a JSON string, where nearly every token
// is allowed (the worst case), and at an object's key, where few are; and warm (the cached mask
// applied to the logits), which is the common per-step cost. Compare with the decode step of the
// real model (README: 12.5–14.1 tok/s, about 75 ms).
func BenchmarkMask(b *testing.B) {
	toks := synthVocab(realVocab)
	g, err := FromSchema([]byte(`{"type":"object","properties":{"answer":{"type":"string"},"n":{"type":"integer"}},"required":["answer","n"]}`))
	if err != nil {
		b.Fatal(err)
	}
	inString := g.Start().Feed([]byte(`{"answer":"The qu`))
	atKey := g.Start().Feed([]byte(`{`))
	logits := make([]float32, realVocab)
	for _, c := range []struct {
		name string
		m    *Matcher
	}{{"string", inString}, {"key", atKey}} {
		b.Run(c.name+"/cold", func(b *testing.B) {
			v := NewVocab(toks, realVocab)
			for b.Loop() {
				clear(v.cache)
				v.Mask(logits, c.m, -1)
			}
		})
		b.Run(c.name+"/warm", func(b *testing.B) {
			v := NewVocab(toks, realVocab)
			v.Mask(logits, c.m, -1)
			for b.Loop() {
				v.Mask(logits, c.m, -1)
			}
		})
	}
}
