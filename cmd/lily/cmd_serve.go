package main

import (
	"fmt"
	"io"
)

// cmdServe is not built yet; its issue replaces this file.
func cmdServe(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "lily serve: not implemented yet")
	return 1
}
