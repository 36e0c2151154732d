package cpu

import "fmt"

// rowBlock is the granularity of the mat-vec row split: workers get ranges of rows starting at a
// multiple of 8, and the SIMD kernels finish 8 rows together (one vector of results).
const rowBlock = 8

// simdLevel caps the instruction sets simdImpl uses (tests and benchmarks compare the levels on
// one machine; New uses the best the CPU has).
type simdLevel int

const (
	level256  simdLevel = iota // AVX2 and FMA only
	level512                   // also AVX-512, float32 activations in the 4-bit mat-vec
	levelBest                  // also AVX-512 VNNI for the 4-bit mat-vec
)

// rowsFunc computes rows [lo, hi) of y: [Out] = W: [Out, In] · x: [In].
type rowsFunc func(y []float32, m *QMat, v *Vec, lo, hi int)

// nextRowsFunc is a rowsFunc told where its caller is likely to read next (f), so that its last
// prefetches can fetch that instead of bytes past its rows (qmvPasses).
type nextRowsFunc func(y []float32, m *QMat, v *Vec, lo, hi int, f following)

// following says where a mat-vec's caller is likely to read after it: matrix m from row row, or,
// with t set, what t.after(end, hi) says when asked (a take's end: the dispatch's first unclaimed
// block, asked as late as possible). The zero value knows nothing.
type following struct {
	m       *QMat
	row     int
	t       *batchTask
	end, hi int
}

// known reports whether f may name a matrix.
func (f following) known() bool { return f.m != nil || f.t != nil }

// resolve returns the matrix and row (nil: none known).
func (f following) resolve() (*QMat, int) {
	if f.t != nil {
		return f.t.after(f.end, f.hi)
	}
	return f.m, f.row
}

// impl is one complete set of kernel bodies, portable or SIMD, chosen in New.
type impl struct {
	qmv4, qmv8, qmvQ16 rowsFunc
	qmv4Next, qmv8Next nextRowsFunc // nil: the kernels do not prefetch past their rows
	dot                func(a, b []float32) float32
	axpy               func(y []float32, a float32, x []float32)
	scaleAxpy          func(y []float32, b, a float32, x []float32)
	bf16mv             func(y []float32, w []uint16, in int, x []float32, lo, hi int)
	qmm                qmmRowsFunc
	qmmPerm            bool            // qmm reads X with each group in unpack order (qmmPermute)
	vnni               bool            // qmv4 is the AVX-512 VNNI kernel (qmv4RowsVNNI)
	vnni8              bool            // qmv8 is the AVX-512 VNNI kernel (qmv8RowsVNNI)
	qmmTile            qmmTileFunc     // the integer GEMM's tile (nil: 4-bit mat-mats run qmm)
	qmmTileRows        qmmTileRowsFunc // the same tile down pairs of rows, stored into Y (full tiles)
	qmmLanes           qmmLanesFunc    // the lane-group GEMM (nil: the 2-group tile runs every width)
	laneRepack         laneRepackFunc  // its weights in lane order, for qmmLanesQuad
	qmmLanesQuad       qmmLanesQuadFunc
	laneQuads          laneQuadsFunc // laneRepack and qmmLanesQuad quad by quad, the Go side's checks once a call
	readSum            func(x []uint64) uint64
	readSumPF          func(x []uint64) uint64                 // a second streaming read, with software prefetch (nil: none)
	siluMul            func(out, g, u []float32, c *expConsts) // u nil: out = silu(g)
	sigmoidMul         func(x, g []float32, c *expConsts)      // x *= sigmoid(g)
	rmsNorm64          func(out, x, w []float32, eps float64)
	dots               func(out, q, rows []float32, stride int)
	expShift           func(x []float32, m float32, c *expConsts) float64
	axpyRows           func(acc, p, rows []float32, stride int)
	scoreTile          func(s, q []float32, m, d int, keys []float32, ks, n int)
	accumTile          func(o []float32, m, d int, p []float32, n int, v []float32, vs int)
	deltaUpdate        func(s []float32, decay float32, k, q, delta, out []float32)
	maxOf              func(x []float32) float32
	argmax             func(x []float32) int
	toF16              func(dst []uint16, src []float32)
	fromF16            func(dst []float32, src []uint16)
	expTiny            func(x []float32, c *expConsts)
	scaleRows          func(dst []float32, d int, src []float32, ss int, f []float32)
	causalDecay        func(c []float32, n int, gam, s []float32, strict bool, e *expConsts)
	accumTileT         func(o []float32, m, d int, pt []float32, ps, n int, v []float32, vs int, out tileOut)
	unitLowerInverse   func(t, l []float32, n int)
	accumTileLower     func(o []float32, m, d int, p []float32, v []float32, vs int)
	gatedScale         func(out, x, gate, w []float32, r float32, c *expConsts)
	mulAdd             func(y, a, b []float32)
	convSiLU4          func(out []float32, w, x [4][]float32, c *expConsts) // ConvSiLU4 (nil: its steps)
	scoreTileLower     func(s, q []float32, m, d int, keys []float32, ks int)
	// The fp16 KV cache's tiles (nil: widen the block into scratch, then scoreTile / accumTile).
	scoreTileF16 func(s, q []float32, m, d int, keys []uint16, ks, n int, scratch []float32, vals []uint16)
	accumTileF16 func(o []float32, m, d int, p []float32, n int, v []uint16, vs int, scratch []float32)
}

func portableImpl() impl {
	return impl{
		qmv4: qmvRowsPortable, qmv8: qmvRowsPortable, qmvQ16: qmvQ16RowsPortable,
		dot: dotPortable, axpy: axpyPortable, scaleAxpy: scaleAxpyPortable, bf16mv: bf16RowsPortable, readSum: readSumPortable,
		siluMul: siluMulPortable, sigmoidMul: sigmoidMulPortable, rmsNorm64: rmsNorm64Portable, qmm: qmmRowsPortable,
		dots: dotsPortable, expShift: expShiftPortable, axpyRows: axpyRowsPortable,
		maxOf: maxOfPortable, argmax: argmaxPortable, toF16: f32ToF16Portable, fromF16: f16ToF32Portable, scoreTile: scoreTilePortable, accumTile: accumTilePortable, deltaUpdate: deltaUpdatePortable,
		expTiny: expTinyPortable, scaleRows: scaleRowsPortable, causalDecay: causalDecayPortable, accumTileT: accumTileTPortable,
		unitLowerInverse: unitLowerInversePortable, accumTileLower: accumTileLowerPortable,
		gatedScale: gatedScalePortable, mulAdd: mulAddPortable,
		scoreTileLower: scoreTileLowerPortable,
	}
}

// Kernels runs the CPU kernels on a Pool. The implementation (SIMD or portable) is fixed at
// construction. Like its Pool, a Kernels is safe for one caller at a time: its methods keep their
// per-call state in the Kernels value so that they allocate nothing.
type Kernels struct {
	pool *Pool
	simd bool
	f    impl

	mv      qmvTask
	batch   batchTask
	mm      qmmTask
	bmv     bf16Task
	buf     [][]float32    // per-worker scratch of the mat-mat: qmmRowBlock dequantized rows
	xperm   []float32      // the mat-mat's X as its kernel reads it (qmmPermute)
	ig      qmmIntTask     // the integer GEMM's task
	recs    limbRecords    // the integer GEMM's token records
	lvecs   map[int][]*Vec // per input width, per-worker scratch of the records' preparation
	tileOut [][32]float32  // per-worker output of the integer GEMM's tile
	one     [1]MatMat      // QMatMat's batch of one
	local   []workerGEMM   // per-worker state of QMatMatsOn
	laneW   [][]byte       // per-worker weights of a row block in lane order (qmmLanesRows)
	limbs   int            // limbs the integer GEMM reads: qmmLimbs (tests change it)
	shift   uint           // their relative weight as a shift: limbShift (tests change it)
	noLanes bool           // run every width on the 2-group tile (tests and benchmarks compare)

	exp        *expConsts // the SIMD exp's constants
	largeX     int        // T·In from which QMatMat runs in token blocks: qmmLargeX (tests change it)
	tokenBlock int        // their token count: qmmTokenBlock (tests change it)
}

// New returns kernels on p, using the archsimd versions when the binary was built with
// GOEXPERIMENT=simd for amd64 and the CPU has AVX2 and FMA, else the portable ones.
func New(p *Pool) *Kernels {
	if haveSIMD() {
		return newKernels(p, simdImpl(levelBest), true)
	}
	return NewPortable(p)
}

// NewPortable returns kernels on p that use the pure-Go versions only.
func NewPortable(p *Pool) *Kernels { return newKernels(p, portableImpl(), false) }

func newKernels(p *Pool, f impl, simd bool) *Kernels {
	k := &Kernels{pool: p, simd: simd, f: f, buf: make([][]float32, p.Workers()), largeX: qmmLargeX, tokenBlock: qmmTokenBlock, limbs: qmmLimbs, shift: limbShift, exp: newExpConsts(),
		tileOut: make([][32]float32, p.Workers()), local: make([]workerGEMM, p.Workers()), laneW: make([][]byte, p.Workers())}
	return k
}

// SIMD reports whether the archsimd kernels are in use.
func (k *Kernels) SIMD() bool { return k.simd }

// VNNI reports whether QMatVec runs 4-bit matrices on the AVX-512 VNNI kernel: x as three int8 limbs
// (within 6e-8 of each group's largest |x|), exact integer dot products, and faster than both the
// float32 and the int16 kernels.
func (k *Kernels) VNNI() bool { return k.f.vnni }

// NewVec allocates a Vec for inputs of length n with what these kernels read: the VNNI limb copy
// only where QMatVec runs on it (preparing it costs about a third of Vec.Prepare).
func (k *Kernels) NewVec(n int) *Vec {
	v := newVec(n, k.f.vnni)
	v.floatQ4 = !k.f.vnni || n/GroupSize%8 != 0
	return v
}

// Pool returns the pool the kernels run on.
func (k *Kernels) Pool() *Pool { return k.pool }

// qmvTask is the pool task of one quantized mat-vec.
type qmvTask struct {
	rows rowsFunc
	y    []float32
	m    *QMat
	v    *Vec
}

// Do runs row blocks [lo, hi) (rowBlock rows each).
func (t *qmvTask) Do(_, lo, hi int) {
	t.rows(t.y, t.m, t.v, lo*rowBlock, min(hi*rowBlock, t.m.Out))
}

// QMatVec computes y: [Out] = W: [Out, In] · x: [In] for a 4- or 8-bit matrix with the
// dequantization fused into the dot product, in float32:
// y[o] = Σ_g scale[o,g]·(Σ_{i∈g} x_i·q_{o,i}) + bias[o,g]·(Σ_{i∈g} x_i).
// v must have been prepared from x. Rows are split across the pool's workers.
func (k *Kernels) QMatVec(y []float32, m *QMat, v *Vec) {
	k.checkMV(y, m, v)
	rows := k.f.qmv4
	if m.Bits == 8 {
		rows = k.f.qmv8
	}
	k.runMV(rows, y, m, v)
}

// QMatVecQ16 is QMatVec against the int16 copy of x (v prepared with PrepareQ16): the inner sums
// Σ q16_i·q_i are exact integers, and the only extra error is the activation rounding,
// |x_i − d·q16_i| ≤ d/2 with d = max_g|x|/32767. 8-bit matrices use the float32 path.
func (k *Kernels) QMatVecQ16(y []float32, m *QMat, v *Vec) {
	if m.Bits == 8 {
		k.QMatVec(y, m, v)
		return
	}
	k.checkMV(y, m, v)
	if !v.hasQ {
		panic("cpu: QMatVecQ16: Vec not prepared with PrepareQ16")
	}
	k.runMV(k.f.qmvQ16, y, m, v)
}

// inlineBytes is the matrix size under which a mat-vec runs on the calling goroutine alone: waking a
// worker costs microseconds (more on a loaded machine), as much as reading 32 KB.
const inlineBytes = 32 << 10

func (k *Kernels) runMV(rows rowsFunc, y []float32, m *QMat, v *Vec) {
	if m.Out*m.RowBytes() <= inlineBytes {
		rows(y, m, v, 0, m.Out)
		return
	}
	k.mv = qmvTask{rows: rows, y: y, m: m, v: v}
	k.pool.RunTaskTapered((m.Out+rowBlock-1)/rowBlock, &k.mv)
	k.mv = qmvTask{}
}

// qmv8PadRows is the widest 8-bit row (in bytes) whose last rows qmv8RowsVNNI runs through a
// stack copy padded to a four-row pass: the model's 8-bit matrices (the router and the shared
// expert's gate) read the hidden state, 2,048 bytes a row.
const qmv8PadRows = 4096

// qmv8Limbs reports whether qmv8RowsVNNI runs m's rows against v's limbs (rather than the float32
// kernel, which reads v's 8-bit order: Vec.fillP8).
func qmv8Limbs(m *QMat, v *Vec) bool {
	return m.Groups()%8 == 0 && m.RowBytes() <= qmv8PadRows && v.l8 != nil
}

// checkMV checks a mat-vec's shapes and fills the forms of v that only some kernels read (fillP8).
func (k *Kernels) checkMV(y []float32, m *QMat, v *Vec) {
	if err := m.Check(); err != nil {
		panic("cpu: " + err.Error())
	}
	if v.n != m.In || len(y) < m.Out {
		panic(fmt.Sprintf("cpu: QMatVec: W [%d, %d], x [%d], y [%d]", m.Out, m.In, v.n, len(y)))
	}
	if k.f.vnni && m.Bits == 4 && v.l8 == nil {
		panic("cpu: QMatVec: Vec without the limb copy the VNNI kernel reads (use Kernels.NewVec)")
	}
	if m.Bits == 8 && !(k.f.vnni8 && qmv8Limbs(m, v)) {
		v.fillP8() // before the workers read it
	}
}
