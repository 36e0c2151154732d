//go:build race

package kernelcheck

// raceEnabled: the race detector slows the Go reference computations several times over.
const raceEnabled = true
