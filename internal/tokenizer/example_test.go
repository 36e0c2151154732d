package tokenizer_test

import (
	"fmt"
	"strings"

	"github.com/lily-engine/lily/internal/tokenizer"
)

func Example() {
	tk, err := tokenizer.Load("../../fixtures/tokenizer/qwen36-tiny/tokenizer.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := tk.Encode("<|im_start|>user\nCafe\u0301 ☕<|im_end|>")
	text, _ := tk.Decode(ids, false) // NFC-normalized: "e" + U+0301 comes back as "é"
	plain, _ := tk.Decode(ids, true) // without the special tokens
	fmt.Printf("%q\n%q\n", text, plain)

	// Streaming never splits a character, however the ids fall.
	d := tk.NewDecoder(true)
	var parts []string
	for _, id := range ids {
		s, _ := d.Add(id)
		parts = append(parts, s)
	}
	streamed := strings.Join(parts, "") + d.Flush()
	fmt.Println(streamed == plain, strings.ContainsRune(streamed, '\uFFFD'))
	// Output:
	// "<|im_start|>user\nCafé ☕<|im_end|>"
	// "user\nCafé ☕"
	// true false
}
