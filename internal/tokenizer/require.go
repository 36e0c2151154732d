package tokenizer

import (
	"fmt"
	"strings"
)

// ChatTokens are the added tokens the Qwen3.6 chat format and its stop ids need.
var ChatTokens = []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"}

// RequireAdded returns an error naming every token of want that is not one of the tokenizer's
// added tokens. Without them a chat prompt's markers become byte pieces and generation has no stop
// id, so the model would be served silently wrong.
func (t *Tokenizer) RequireAdded(want ...string) error {
	var missing []string
	for _, w := range want {
		if _, ok := t.added[w]; !ok {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("tokenizer: the added tokens lack %s (is added_tokens missing from tokenizer.json?)",
			strings.Join(missing, ", "))
	}
	return nil
}
