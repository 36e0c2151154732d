package main

import (
	"fmt"
	"io"
)

// cmdRun is not built yet; its issue replaces this file.
func cmdRun(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "lily run: not implemented yet")
	return 1
}
