// Package device is the Metal device layer: lily's hand-written Metal kernels (kernels/*.metal), the
// Device interface the engine drives, the darwin bridge that runs the kernels on Apple GPUs (purego,
// no cgo), and the emulator device that runs the same sources on the CPU through metal/emu, so
// every kernel is checked against ref in Linux CI.
package device

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
