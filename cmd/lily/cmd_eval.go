package main

import (
	"fmt"
	"io"
)

// cmdEval is not built yet; its issue replaces this file.
func cmdEval(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "lily eval: not implemented yet")
	return 1
}
