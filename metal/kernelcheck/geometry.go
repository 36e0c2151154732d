package kernelcheck

import "github.com/lily-engine/lily/metal"

// The engine's dispatch geometry, under the names the checks use.
const (
	qmvRows     = metal.QMVRows
	qmvThreads  = metal.QMVThreads
	gemmTile    = metal.GEMMTile
	gemmThreads = metal.GEMMThreads
)

func lanes(n, limit int) int { return metal.Lanes(n, limit) }

func cdiv(a, b int) int { return (a + b - 1) / b }
