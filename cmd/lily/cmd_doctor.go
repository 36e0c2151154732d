package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// doctorHelp is `lily doctor --help`: what to run on a Mac and what each FAIL means.
const doctorHelp = `usage: lily doctor [--device metal|metal-emu] [--model DIR] [--ctx-size N] [--tokens N] [--json]

Checks that this machine can run lily's Metal engine, end to end, and says what is wrong when it
cannot. On a Mac run, first without and then with the checkpoint:

  lily doctor --device metal
  lily doctor --device metal --model ~/models/Qwen3.6-35B-A3B-4bit --ctx-size 32768

Every check prints PASS, FAIL or SKIP with its reason; the exit status is 1 when any check FAILs.
--device metal-emu runs the same checks on the CPU emulator of the kernels (any OS, needs g++).

What each FAIL means:
  device       no Metal device could be opened, or the kernel library did not compile (the error says
               which); nothing else can run.
  limits       the device reported no maxBufferLength or recommendedMaxWorkingSetSize.
  abi_probe    a thread/threadgroup position, a buffer bound at a non-zero offset or an inline constant
               did not arrive as the kernels assume: every kernel result is suspect.
  kernel/NAME  that kernel (or kernel pair), run at the real model's sizes on random data, differs from
               ref by more than its error budget, or its dispatch failed: the detail names the output
               and the error. That kernel computes wrong numbers on this GPU; the generation will fail too.
  pipelines    a kernel's pipeline allows fewer threads per threadgroup than the model's plans dispatch.
  shards       a *.safetensors file of the checkpoint could not be read.
  memory       weights + KV cache at --ctx-size + buffers exceed recommendedMaxWorkingSetSize (lower
               --ctx-size or raise iogpu.wired_limit_mb as the message says), or one buffer exceeds
               maxBufferLength.
  generation   a greedy generation on the device disagrees with the reference (ref) on the top-1 token
               more often than the budget allows: a kernel computes wrong numbers on this GPU.
To find which kernel misbehaves, rerun under Metal's validation layers:
  MTL_DEBUG_LAYER=1 MTL_SHADER_VALIDATION=1 lily doctor --device metal --model DIR
and send the full output (with --json) to the lily developers.

flags:
`

// cmdDoctor checks the Metal device (and a checkpoint on it): lily doctor --device metal [--model DIR].
func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("doctor", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	o := doctorOptions{}
	fs.StringVar(&o.device, "device", "metal", "device to check: metal (the GPU, macOS) or metal-emu (the CPU emulator)")
	fs.StringVar(&o.model, "model", "", "checkpoint directory (MLX layout) to check on the device; without it the checkpoint checks SKIP")
	fs.IntVar(&o.ctxSize, "ctx-size", 0, "context the memory check sizes the KV cache for (0: the model's maximum)")
	fs.IntVar(&o.tokens, "tokens", 32, "tokens of the greedy generation compared with ref")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, doctorHelp)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "lily doctor: %v\n", err)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "lily doctor: unexpected arguments %q\n", fs.Args())
		return 2
	case o.device != "metal" && o.device != "metal-emu":
		fmt.Fprintf(stderr, "lily doctor: --device must be metal or metal-emu, not %q\n", o.device)
		return 2
	case o.ctxSize < 0 || o.tokens < 1:
		fmt.Fprintln(stderr, "lily doctor: --ctx-size must be ≥ 0 and --tokens ≥ 1")
		return 2
	}
	r := runDoctor(o)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintf(stderr, "lily doctor: %v\n", err)
			return 1
		}
	} else {
		fmt.Fprintf(stdout, "lily doctor: device %s\n", o.device)
		for _, c := range r.Checks {
			fmt.Fprintf(stdout, "%-4s  %-20s %s\n", c.Status, c.Name, c.Detail)
		}
	}
	if !r.OK {
		return 1
	}
	return 0
}
