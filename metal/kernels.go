// Package metal holds lily's hand-written Metal kernels (kernels/*.metal), the darwin bridge that
// runs them on Apple GPUs, and — through metal/emu — the CPU emulator that runs the same sources in
// Linux CI so every kernel is checked against ref.
package metal

import (
	"embed"
	"sort"
	"strings"
)

//go:embed kernels/*.metal
var kernelFS embed.FS

// Source returns the kernel library source: every kernels/*.metal file concatenated in name order
// (00_common.metal first). The device and the emulator compile exactly this text.
func Source() string {
	ents, err := kernelFS.ReadDir("kernels")
	if err != nil {
		panic("metal: embedded kernels missing: " + err.Error()) // impossible: go:embed checked it at build time
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		data, _ := kernelFS.ReadFile("kernels/" + n)
		b.WriteString("// ---- " + n + " ----\n")
		b.Write(data)
		b.WriteString("\n")
	}
	return b.String()
}
