package main

import (
	"fmt"
	"io"
)

// cmdTokenize is not built yet; its issue replaces this file.
func cmdTokenize(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "lily tokenize: not implemented yet")
	return 1
}
