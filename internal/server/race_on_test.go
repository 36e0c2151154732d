//go:build race

package server_test

// raceEnabled: the race detector slows every goroutine several times over.
const raceEnabled = true
