package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// modelFlags are the flags every command that opens a checkpoint and builds a backend over it
// (bench, eval, run, diff, serve) takes alike: --model, --backend, and the fast backend's
// --device and --int16-activations. inspect takes --model alone (addModelFlag).
type modelFlags struct {
	dir     *string     // --model ("": the Hugging Face cache)
	backend *string     // --backend as given: the command reads it (bench: a list; diff: a device)
	spec    backendSpec // --device and --int16-activations; name unset
}

// addModelFlag defines --model, the checkpoint directory, on fs.
func addModelFlag(fs *pflag.FlagSet) *string {
	return fs.String("model", "", "checkpoint directory: config.json, *.safetensors, tokenizer.json (default: "+
		checkpoint.DefaultRepo+" in the Hugging Face cache)")
}

// addModelFlags defines --model, --backend (default fast; backendHelp says what the command
// accepts), --device (deviceDefault says what no --device means) and --int16-activations on fs.
// The default device's startup note goes to the flag set's output (the command's stderr).
func addModelFlags(fs *pflag.FlagSet, backendHelp, deviceDefault string) *modelFlags {
	m := &modelFlags{dir: addModelFlag(fs), backend: fs.String("backend", "fast", backendHelp)}
	m.spec.log = fs.Output()
	fs.StringVar(&m.spec.device, "device", "", "device of the fast backend: cpu, metal or metal-emu (default: "+deviceDefault+")")
	fs.BoolVar(&m.spec.int16, "int16-activations", false, "fast on the cpu: every 4-bit decode mat-vec reads int16 activations (faster without AVX-512 VNNI, slower with it; measured fidelity cost in README)")
	return m
}

// defaultDeviceHelp is what no --device means where the fast backend picks its device itself.
const defaultDeviceHelp = "metal when a GPU is present, else cpu"

// single is the spec of the one backend --backend names (ref or fast), checked.
func (m *modelFlags) single() (backendSpec, error) {
	s := m.spec
	s.name = *m.backend
	return s, s.check()
}

// parseFlags parses args into fs. On --help it prints the usage on stdout and returns 0, done; on a
// bad flag it prints the error and the usage on stderr and returns 2, done. usage writes to
// fs.Output().
func parseFlags(fs *pflag.FlagSet, args []string, cmd string, usage func(), stdout, stderr io.Writer) (int, bool) {
	fs.Usage = func() {} // pflag would print it on stderr before returning ErrHelp; it is printed once here
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, pflag.ErrHelp):
		fs.SetOutput(stdout)
		usage()
		fs.SetOutput(stderr)
		return 0, true
	}
	fmt.Fprintf(stderr, "lily %s: %v\n", cmd, err)
	usage()
	return 2, true
}

// modelUsage is the usage line's part for addModelFlags' flags; backends lists what --backend
// takes, as in "fast|ref".
func modelUsage(backends string) string {
	return "[--model DIR] [--backend " + backends + "] [--device D] [--int16-activations]"
}
