package main

import (
	"fmt"
	"io"
)

// cmdBench is not built yet; its issue replaces this file.
func cmdBench(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "lily bench: not implemented yet")
	return 1
}
