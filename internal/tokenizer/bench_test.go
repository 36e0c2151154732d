package tokenizer_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// benchSources are the kinds of text the benchmark mixes: several scripts, code, numbers and emoji.
var benchSources = []string{
	"The quick brown fox jumps over the lazy dog; it's 3.14159 times faster than you'd think. ",
	"Съешь же ещё этих мягких французских булок, да выпей чаю. ",
	"人工智能正在改变世界，我们今天是2026年12月2日讨论这个问题。",
	"いろはにほへと ちりぬるを わかよたれそ つねならむ。",
	"다람쥐 헌 쳇바퀴에 타고파. 한국어 텍스트입니다. ",
	"نص حكيم له سر قاطع وذو شأن عظيم مكتوب على ثوب أخضر. ",
	"ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश। ",
	"เป็นมนุษย์สุดประเสริฐเลิศคุณค่า กว่าบรรดาฝูงสัตว์เดรัจฉาน ",
	"func main() {\n\tfor i := 0; i < 10; i++ {\n\t\tfmt.Printf(\"%d\\n\", i*i)\n\t}\n}\n",
	"{\"id\": 12345, \"name\": \"lily\", \"tags\": [\"go\", \"bpe\"], \"score\": 0.987}\n",
	"Ξεσκεπάζω την ψυχοφθόρα βδελυγμία 👍🏽 🎉 👨‍👩‍👧 ",
}

// mixedText returns about n bytes of text: words drawn at random from benchSources, so that the
// per-call word cache sees realistic repetition rather than one paragraph over and over.
func mixedText(n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	var words [][]string
	for _, s := range benchSources {
		words = append(words, strings.SplitAfter(s, " "))
	}
	var sb strings.Builder
	for sb.Len() < n {
		src := words[r.IntN(len(words))]
		start := r.IntN(len(src))
		for _, w := range src[start:min(len(src), start+1+r.IntN(12))] {
			sb.WriteString(w)
		}
		if r.IntN(4) == 0 {
			fmt.Fprintf(&sb, " %d ", r.IntN(1_000_000))
		}
		if r.IntN(10) == 0 {
			sb.WriteString("\n\n")
		}
	}
	return sb.String()
}

func BenchmarkEncode1MB(b *testing.B) {
	for _, name := range []string{"qwen3", "qwen36-tiny"} {
		b.Run(name, func(b *testing.B) {
			tk := load(b, name)
			text := mixedText(1 << 20)
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				tk.Encode(text)
			}
		})
	}
}
