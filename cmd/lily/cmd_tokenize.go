package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/lily-engine/lily/internal/checkpoint"
)

const tokenizeUsage = `usage: lily tokenize [--model DIR] (--text TEXT | --chat FILE)

Encodes text with the model's tokenizer (DIR/tokenizer.json) and prints {"ids":[…]}.
Added tokens such as <|im_start|> in the text are matched whole; no BOS or EOS is added.
With --chat, FILE holds {"messages":[…],"tools":[…],"add_generation_prompt":true,
"chat_template_kwargs":{…}}; the rendered prompt is encoded and printed too, as "text".

flags:
`

// cmdTokenize implements `lily tokenize`.
func cmdTokenize(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tokenize", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "model directory holding tokenizer.json (default: the MLX checkpoint in the Hugging Face cache)")
	text := fs.String("text", "", "text to encode")
	chatFile := fs.String("chat", "", "JSON file with a chat conversation to render and encode")
	help := fs.BoolP("help", "h", false, "show this help")
	fs.Usage = func() {} // usage errors are reported once, by usageErr
	usageErr := func(msg string) int {
		fmt.Fprintf(stderr, "lily tokenize: %s\n\n%s", msg, tokenizeUsage)
		fs.PrintDefaults()
		return 2
	}
	err := fs.Parse(args)
	switch {
	case err != nil:
		return usageErr(err.Error())
	case *help:
		fmt.Fprint(stdout, tokenizeUsage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0
	case fs.NArg() > 0:
		return usageErr(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	case fs.Changed("text") == fs.Changed("chat"):
		return usageErr("give exactly one of --text and --chat")
	}
	dir, err := checkpoint.Locate(*model)
	if err != nil {
		fmt.Fprintf(stderr, "lily tokenize: %v\n", err)
		return 1
	}
	tk, err := loadTokenizer(dir)
	if err != nil {
		fmt.Fprintf(stderr, "lily tokenize: %v\n", err)
		return 1
	}
	var res struct {
		IDs  []int32 `json:"ids"`
		Text *string `json:"text,omitempty"`
	}
	if fs.Changed("chat") {
		in, err := readChatFile(*chatFile)
		if err == nil {
			var rendered string
			if rendered, err = in.render(); err == nil {
				res.Text = &rendered
				res.IDs = tk.Encode(rendered)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "lily tokenize: %v\n", err)
			return 1
		}
	} else {
		res.IDs = tk.Encode(*text)
	}
	out, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintf(stderr, "lily tokenize: %v\n", err)
		return 1
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", out); err != nil {
		fmt.Fprintf(stderr, "lily tokenize: %v\n", err)
		return 1
	}
	return 0
}
