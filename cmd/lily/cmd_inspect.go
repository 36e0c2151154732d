package main

import (
	"fmt"
	"io"
)

// cmdInspect is not built yet; its issue replaces this file.
func cmdInspect(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "lily inspect: not implemented yet")
	return 1
}
