//go:build race

package metal

// raceEnabled: the race detector slows the Go reference computations several times over.
const raceEnabled = true
