// Command lily serves Qwen3.6-35B-A3B through an OpenAI-compatible API and holds the tools around it:
// serve, run, tokenize, bench, eval, inspect, synth, doctor.
//
// In GOEXPERIMENT=simd builds lily re-executes itself once with asynchronous preemption off
// (preempt_simd.go says why).
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand: it parses its own flags from args and returns an exit code
// (0 ok, 1 error, 2 usage error).
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

func commands() map[string]command {
	return map[string]command{
		"serve":    {"serve the model over an OpenAI-compatible HTTP API", cmdServe},
		"run":      {"generate from a prompt on the command line", cmdRun},
		"tokenize": {"encode text or a chat conversation to token ids", cmdTokenize},
		"bench":    {"measure prefill and decode speed against the machine's roofline", cmdBench},
		"eval":     {"teacher-forced agreement and perplexity of one backend against another", cmdEval},
		"diff":     {"localise a numerical divergence from ref to one point, layer and step", cmdDiff},
		"inspect":  {"describe a checkpoint: layout, quantization, parameters, bytes", cmdInspect},
		"synth":    {"write a random-weight checkpoint in the real layouts", cmdSynth},
		"gguf":     {"write the checkpoint as llama.cpp's GGUF (Q4_0), to compare the engines", cmdGGUF},
		"doctor":   {"check that this machine runs the Metal engine (device, limits, kernels, a checkpoint)", cmdDoctor},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: lily <command> [flags]\n\ncommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'lily <command> --help' for a command's flags.")
}

func main() {
	withoutAsyncPreemption()
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return 0
	}
	c, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "lily: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}
