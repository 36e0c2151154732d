//go:build !race

package metal

const raceEnabled = false
