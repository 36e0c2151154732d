package grammar

import (
	"encoding/json"
	"testing"
)

// FuzzFromSchema compiles arbitrary schemas and feeds arbitrary text: an error or a grammar, never
// a panic; a text the grammar completes is JSON.
func FuzzFromSchema(f *testing.F) {
	f.Add([]byte(personSchema), []byte(`{"kind":"x","name":"Al","tags":["a"]}`))
	f.Add([]byte(`{"type":"array","items":{"type":"number"},"maxItems":2}`), []byte(`[1.5e3,-0]`))
	f.Add([]byte(`{}`), []byte(`{"a":[{"b":null}]}`))
	f.Add([]byte(`{"anyOf":[{"type":"string","maxLength":2},{"enum":[1,"x"]}]}`), []byte(`"\u00e9"`))
	f.Fuzz(func(t *testing.T, schema, text []byte) {
		g, err := FromSchema(schema)
		if err != nil {
			return
		}
		m := g.Start()
		for i := range text {
			m = m.Feed(text[i : i+1])
			if m.Dead() {
				return
			}
			_ = m.Remaining()
		}
		if m.Complete() && !json.Valid(text) {
			t.Fatalf("grammar of %s completes %q, which is not JSON", schema, text)
		}
	})
}
