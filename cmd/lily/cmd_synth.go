package main

import (
	"fmt"
	"io"
)

// cmdSynth is not built yet; its issue replaces this file.
func cmdSynth(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "lily synth: not implemented yet")
	return 1
}
