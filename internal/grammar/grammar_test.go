package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

const personSchema = `{"type":"object","properties":{
	"name":{"type":"string","minLength":1,"maxLength":12},
	"age":{"type":"integer"},
	"tags":{"type":"array","items":{"enum":["a","b\"c",3,null]},"minItems":1,"maxItems":3},
	"score":{"type":["number","null"]},
	"kind":{"anyOf":[{"const":"x"},{"type":"object","properties":{"deep":{"type":"boolean"}},"required":["deep"]}]},
	"extra":{}
},"required":["name","tags","kind"],"additionalProperties":false}`

func compile(t testing.TB, schema string) *Grammar {
	t.Helper()
	g, err := FromSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func accepts(g *Grammar, s string) bool { return g.Start().Feed([]byte(s)).Complete() }

func TestSchemaAcceptsAndRejects(t *testing.T) {
	g := compile(t, personSchema)
	for _, s := range []string{
		`{"kind":"x","name":"Al","tags":["a"]}`,
		`{"age":-12,"kind":{"deep":true},"name":"é\u00e9\n","score":1.5e+3,"tags":["b\"c",3,null]}`,
		`{"extra":{"k":[1,{"z":false}]},"kind":"x","name":"A","score":null,"tags":[3]}`,
	} {
		if !accepts(g, s) {
			t.Errorf("rejects %s", s)
		}
	}
	for _, s := range []string{
		`{"kind":"x","name":"","tags":["a"]}`,               // minLength
		`{"kind":"x","name":"Al","tags":[]}`,                // minItems
		`{"kind":"x","name":"Al","tags":["a","a","a","a"]}`, // maxItems
		`{"name":"Al","tags":["a"]}`,                        // required kind
		`{"kind":"y","name":"Al","tags":["a"]}`,             // const
		`{"kind":"x","name":"Al","tags":["a"],"zz":1}`,      // additional
		`{"age":1.5,"kind":"x","name":"Al","tags":["a"]}`,   // integer
		`{"age":01,"kind":"x","name":"Al","tags":["a"]}`,    // leading zero
		`{"kind":"x","name":"A\x01","tags":["a"]}`,          // control character
		`{"kind":"x","name":"\xff","tags":["a"]}`,           // invalid UTF-8
		`{"kind":"x", "name":"Al","tags":["a"]}`,            // white space
	} {
		if accepts(g, s) {
			t.Errorf("accepts %s", s)
		}
	}
}

func TestSchemaRefusesUnsupported(t *testing.T) {
	for _, s := range []string{
		`{"type":"string","pattern":"a+"}`, `{"$ref":"#/x"}`, `{"oneOf":[{}]}`, `{"type":"integer","minimum":3}`,
		`{"type":"wat"}`, `[1]`, `{"type":"object","properties":{"a":{}},"required":["b"]}`, `false`,
		`{"type":"array","minItems":3,"maxItems":2}`, `{"enum":[]}`, `not json`,
	} {
		if _, err := FromSchema([]byte(s)); err == nil {
			t.Errorf("accepted %s", s)
		}
	}
}

// walk samples a random sentence byte by byte: at each step a random byte that keeps the text a
// prefix, ending when the text is complete with probability 1/4 (or when it must). budget caps the
// length through Remaining, as the decoder's budget does.
func walk(g *Grammar, r *rand.Rand, budget int) (string, bool) {
	m := g.Start()
	var sb strings.Builder
	for sb.Len() < budget {
		if m.Complete() && (m.Final() || r.IntN(4) == 0) {
			return sb.String(), true
		}
		var options []byte
		for c := range 256 {
			next := m.feedByte(byte(c))
			if !next.Dead() && next.Remaining() <= budget-sb.Len()-1 {
				options = append(options, byte(c))
			}
		}
		if len(options) == 0 {
			return sb.String(), m.Complete()
		}
		c := options[r.IntN(len(options))]
		// Bias towards structure so that walks end: closing bytes half the time when allowed.
		for _, o := range options {
			if strings.IndexByte(`"}],`, o) >= 0 && r.IntN(2) == 0 {
				c = o
			}
		}
		m = m.feedByte(c)
		sb.WriteByte(c)
	}
	return sb.String(), m.Complete()
}

// TestRandomSentencesValidate: random sentences of the grammar are JSON that validates against
// the schema (checked by an independent validator).
func TestRandomSentencesValidate(t *testing.T) {
	var schema any
	if err := json.Unmarshal([]byte(personSchema), &schema); err != nil {
		t.Fatal(err)
	}
	g := compile(t, personSchema)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		budget := 40 + r.IntN(120)
		s, ok := walk(g, r, budget)
		if !ok {
			t.Fatalf("walk %d ended incomplete within %d bytes: %q", i, budget, s)
		}
		var doc any
		if err := json.Unmarshal([]byte(s), &doc); err != nil {
			t.Fatalf("walk %d: %q is not JSON: %v", i, s, err)
		}
		if err := validate(schema, doc); err != nil {
			t.Fatalf("walk %d: %s: %v", i, s, err)
		}
	}
}

// TestRemainingIsShortest: Remaining equals the shortest completion found by search.
func TestRemainingIsShortest(t *testing.T) {
	g := compile(t, personSchema)
	r := rand.New(rand.NewPCG(3, 4))
	for range 40 {
		s, _ := walk(g, r, 30+r.IntN(60))
		for cut := 0; cut <= len(s); cut += 1 + r.IntN(7) {
			m := g.Start().Feed([]byte(s[:cut]))
			if m.Remaining() > 24 {
				continue // the search below is exponential in the distance
			}
			if got, want := m.Remaining(), shortestCompletion(m, 30); got != want {
				t.Fatalf("after %q: Remaining %d, shortest completion %d", s[:cut], got, want)
			}
		}
	}
}

// shortestCompletion searches breadth first over the bytes that occur in JSON.
func shortestCompletion(m *Matcher, limit int) int {
	frontier := []*Matcher{m}
	seen := map[string]bool{m.key(): true}
	for d := 0; d <= limit; d++ {
		var next []*Matcher
		for _, x := range frontier {
			if x.Complete() {
				return d
			}
			for _, c := range []byte("{}[]\",:-0123456789.eE+abcdefghijklmnopqrstuvwxyz\\\x80\x90\xa0") {
				y := x.feedByte(c)
				if k := y.key(); !y.Dead() && !seen[k] {
					seen[k] = true
					next = append(next, y)
				}
			}
		}
		frontier = next
	}
	return -1
}

func TestUntilAndStar(t *testing.T) {
	g, err := Compile(Seq(Lit("<a>"), Star(Seq(Lit("<p>"), Until("</p>"))), Lit("</a>")))
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{
		"<a></a>": true, "<a><p>x</p></a>": true, "<a><p><</p<</p><p></p></a>": true,
		"<a><p>x</a>": false, "<a><p>x</p>": false,
	} {
		if got := accepts(g, s); got != want {
			t.Errorf("%q: %v, want %v", s, got, want)
		}
	}
	if _, err := Compile(Star(WS(3))); err == nil {
		t.Error("a Star of an item that matches nothing compiled")
	}
}

func TestVocabMaskMatchesFeeding(t *testing.T) {
	g := compile(t, personSchema)
	r := rand.New(rand.NewPCG(5, 6))
	// A vocabulary of every byte plus random multi-byte strings from JSON's alphabet.
	var toks [][]byte
	for c := range 256 {
		toks = append(toks, []byte{byte(c)})
	}
	const alpha = `{}[]",:-0123456789.eE+tagskindnamexyé `
	for range 3000 {
		n := 2 + r.IntN(6)
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[r.IntN(len(alpha))]
		}
		toks = append(toks, b)
	}
	toks = append(toks, nil) // a padding id
	v := NewVocab(toks, len(toks)+5)
	for range 30 {
		s, _ := walk(g, r, 80)
		m := g.Start().Feed([]byte(s[:r.IntN(len(s)+1)]))
		logits := make([]float32, v.Size())
		v.Mask(logits, m, -1)
		for id, tok := range toks {
			want := len(tok) > 0 && !m.Feed(tok).Dead()
			if got := logits[id] == 0; got != want {
				t.Fatalf("state after %q: token %q allowed %v, want %v", s, tok, got, want)
			}
		}
		for id := len(toks); id < v.Size(); id++ {
			if logits[id] == 0 {
				t.Fatalf("id %d past the tokens allowed", id)
			}
		}
	}
}
