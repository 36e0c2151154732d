package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

const qwen3Fixture = "../../fixtures/tokenizer/qwen3/tokenizer.json.gz"

func loadQwen3(tb testing.TB) *Tokenizer {
	tb.Helper()
	tk, err := Load(qwen3Fixture)
	if err != nil {
		tb.Fatal(err)
	}
	return tk
}

// randomLetters returns n lowercase ASCII letters: one long pre-token with realistic merges.
func randomLetters(n int) string {
	r := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

// BenchmarkLongWord encodes single pre-tokens of 64 KiB, 1 MiB and 8 MiB with the merge in use
// ("new") and the earlier heap of full candidates ("old"), on one letter repeated and on random letters;
// "Encode" is the whole of Encode on the same word (pre-tokenizer, normalizer and merge).
func BenchmarkLongWord(b *testing.B) {
	tk := loadQwen3(b)
	for _, size := range []struct {
		name string
		n    int
	}{{"64KiB", 64 << 10}, {"1MiB", 1 << 20}, {"8MiB", 8 << 20}} {
		for _, kind := range []struct {
			name string
			word string
		}{{"a", strings.Repeat("a", size.n)}, {"letters", randomLetters(size.n)}} {
			if size.n <= 1<<20 { // the old merge takes ~30 s on an 8 MiB word: compared up to 1 MiB
				b.Run(size.name+"/"+kind.name+"/old", func(b *testing.B) {
					b.SetBytes(int64(size.n))
					b.ReportAllocs()
					for b.Loop() {
						tk.bpe.oracleMerge(nil, kind.word)
					}
				})
			}
			b.Run(size.name+"/"+kind.name+"/new", func(b *testing.B) {
				b.SetBytes(int64(size.n))
				b.ReportAllocs()
				for b.Loop() {
					tk.bpe.merge(nil, kind.word, &scratch{})
				}
			})
			b.Run(size.name+"/"+kind.name+"/Encode", func(b *testing.B) {
				b.SetBytes(int64(size.n))
				b.ReportAllocs()
				for b.Loop() {
					tk.Encode(kind.word)
				}
			})
		}
	}
}

// adversarialWords are pre-token shapes that stress the merge queue: long runs of one byte, repeated
// bigrams and trigrams, mixed scripts and raw bytes of every value.
func adversarialWords(r *rand.Rand) []string {
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	words := []string{
		strings.Repeat("a", 1+r.IntN(3000)), strings.Repeat("ab", 1+r.IntN(1500)),
		strings.Repeat("abc", 1+r.IntN(1000)), strings.Repeat("the", 1+r.IntN(1000)),
		strings.Repeat(" ", 1+r.IntN(500)), strings.Repeat("人", 1+r.IntN(500)),
		strings.Repeat("\xe4\xba", 1+r.IntN(500)), string(allBytes), randomLetters(1 + r.IntN(4000)),
	}
	// Random mixes of pieces from a small alphabet of scripts and bytes.
	pieces := []string{"a", "aa", "ab", "e", "er", "ing", "Ġ", " ", "é", "ß", "Σ", "ж", "人", "ไ", "👍", "\xff", "\x00", "1"}
	for range 8 {
		var sb strings.Builder
		for range r.IntN(600) {
			p := pieces[r.IntN(len(pieces))]
			for range 1 + r.IntN(4) {
				sb.WriteString(p)
			}
		}
		words = append(words, sb.String())
	}
	return words
}

func checkMergeAgainstOracle(t *testing.T, tk *Tokenizer, word string) {
	t.Helper()
	if word == "" {
		return
	}
	sc := &scratch{cache: map[string][]int32{}}
	got := tk.bpe.merge(nil, word, sc)
	want := tk.bpe.oracleMerge(nil, word)
	if !slices.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("merge(%q, %d bytes) gives %d ids, the earlier heap %d; first difference at id %d: %v vs %v",
			word[:min(len(word), 80)], len(word), len(got), len(want), i, got[i:min(len(got), i+8)], want[i:min(len(want), i+8)])
	}
	// The scratch is reused from word to word: a second, different word must not see the first.
	if again := tk.bpe.merge(nil, word[:len(word)/2+1], sc); !slices.Equal(again, tk.bpe.oracleMerge(nil, word[:len(word)/2+1])) {
		t.Fatalf("merge with reused scratch differs on %q", word[:min(len(word), 80)])
	}
}

// TestMergeMatchesOracle checks the merge in use against the earlier heap, an independent implementation
// of Hugging Face's BPE that the goldens validated, on random and adversarial words for both fixtures.
func TestMergeMatchesOracle(t *testing.T) {
	for _, path := range []string{qwen3Fixture, "../../fixtures/tokenizer/qwen36-tiny/tokenizer.json"} {
		tk, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(5, 6))
		for range 20 {
			for _, w := range adversarialWords(r) {
				checkMergeAgainstOracle(t, tk, w)
			}
		}
	}
}

// FuzzMergeMatchesOracle compares the two on arbitrary bytes taken as one pre-token, and on the bytes
// repeated, which makes long runs.
func FuzzMergeMatchesOracle(f *testing.F) {
	for _, s := range []string{"a", "aaaaaaa", "abababab", "人工智能", "\xff\xfe", "Ġthe the"} {
		f.Add(s, uint8(3))
	}
	tk := loadQwen3(f)
	f.Fuzz(func(t *testing.T, s string, reps uint8) {
		checkMergeAgainstOracle(t, tk, s)
		checkMergeAgainstOracle(t, tk, strings.Repeat(s, int(reps)))
	})
}

// BenchmarkMergeText merges the pre-tokens of about 1 MiB of ordinary text, code and several scripts,
// one by one without the word cache, with the merge in use ("new") and the earlier heap ("old").
func BenchmarkMergeText(b *testing.B) {
	tk := loadQwen3(b)
	src := []string{
		"The quick brown fox jumps over the lazy dog; it's 3.14159 times faster than you'd think. ",
		"Съешь же ещё этих мягких французских булок, да выпей чаю. ",
		"人工智能正在改变世界，我们今天讨论这个问题。",
		"func main() {\n\tfor i := 0; i < 10; i++ {\n\t\tfmt.Printf(\"%d\\n\", i*i)\n\t}\n}\n",
		"{\"id\": 12345, \"name\": \"lily\", \"tags\": [\"go\", \"bpe\"], \"score\": 0.987}\n",
		"Internationalization, characterization and misunderstandings are antidisestablishmentarian. ",
	}
	r := rand.New(rand.NewPCG(7, 8))
	var sb strings.Builder
	for sb.Len() < 1<<20 {
		sb.WriteString(src[r.IntN(len(src))])
	}
	text := sb.String()
	var words []string
	for i := 0; i < len(text); {
		j := tk.split.next(text, i)
		words = append(words, text[i:j])
		i = j
	}
	b.Run("old", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			for _, w := range words {
				tk.bpe.oracleMerge(nil, w)
			}
		}
	})
	b.Run("new", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		sc := &scratch{}
		for b.Loop() {
			for _, w := range words {
				tk.bpe.merge(nil, w, sc)
			}
		}
	})
}
