package metal

// The kernels' dispatch geometry, exported for code that dispatches a kernel directly rather than
// through the engine's plans: metal/kernelcheck (lily doctor's per-kernel checks).
const (
	QMVRows     = qmvRows     // output rows per qmv_fast threadgroup
	QMVThreads  = qmvThreads  // threads per qmv_fast threadgroup
	GEMMTile    = gemmTile    // the tile32 GEMMs' output tile edge
	GEMMThreads = gemmThreads // threads per tile32 GEMM threadgroup
)

// Lanes is n rounded up to whole SIMD groups of 32, at least one, at most limit: the thread count
// of the kernels that give a thread to each of n items.
func Lanes(n, limit int) int { return lanes(n, limit) }
