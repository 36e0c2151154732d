package fast

import (
	"math"
	"sync"
)

// prefillBufs lends the prefill plan its chunk-sized float32 buffers (the [t, width] activations
// of a layer step and of a chunk), reused across the layers and chunks of one Prefill call and
// dropped at its end (Session.Prefill), so that an idle session holds none of them. Buffers are
// lent as a stack: a step takes its buffers after mark and gives them back with release; the
// i-th buffer on the stack reuses slot i, which grows to the largest request it has seen.
// The contents of a lent buffer are whatever a previous step left: every user writes a buffer
// whole before reading it (TestPrefillBuffersDirty holds the plan to that).
type prefillBufs struct {
	slots  [][]float32
	n      int  // slots lent
	poison bool // tests: each lent buffer is filled with NaN first
}

// take lends a buffer of n floats, contents undefined.
func (p *prefillBufs) take(n int) []float32 {
	if p.n == len(p.slots) {
		p.slots = append(p.slots, nil)
	}
	b := p.slots[p.n]
	if cap(b) < n {
		b = make([]float32, n)
		p.slots[p.n] = b
	}
	p.n++
	b = b[:n]
	if p.poison {
		fillNaN(b)
	}
	return b
}

// fillNaN sets every element of x to NaN (the buffers' poison in tests).
func fillNaN[T float32 | float64](x []T) {
	nan := T(math.NaN())
	for i := range x {
		x[i] = nan
	}
}

// mark returns the stack's height, for release.
func (p *prefillBufs) mark() int { return p.n }

// release gives back every buffer lent since mark returned m.
func (p *prefillBufs) release(m int) { p.n = m }

// drop frees every slot (at the end of a Prefill call, when nothing is lent any more).
func (p *prefillBufs) drop() {
	p.slots, p.n = nil, 0
}

// bytes returns the memory the slots hold.
func (p *prefillBufs) bytes() int {
	n := 0
	for _, b := range p.slots {
		n += 4 * cap(b)
	}
	return n
}

// prefillSpare is the model's one spare set of chunk-sized prefill buffers: a Prefill call takes it
// (Session.borrowPrefillBufs) and gives its buffers back at its end (returnPrefillBufs), so the next
// call on any session reuses them instead of allocating tens of megabytes afresh — fresh memory
// costs a page fault per 4 KB page and the runtime's zeroing, ~3% of a 256-token prefill's
// CPU (BenchmarkPrefill). The model thus holds at most one chunk's buffers while no prefill runs,
// which the memory budget (bench.MemoryAt's Buffers) already counts.
type prefillSpare struct {
	mu    sync.Mutex
	slots [][]float32
	moe   expertBufs
	work  workerBufs
}

// bytes returns the memory the spare holds.
func (p *prefillSpare) bytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	pf := prefillBufs{slots: p.slots}
	return pf.bytes() + p.moe.bytes() + p.work.bytes()
}

// workerBufs is each pool worker's scratch for the prefill plan's parallel loops that need some
// (the attention's query, output and score blocks; the conv's ring of rows): one float32 and one
// float64 buffer a worker, grown to the largest request and lent whole to whichever loop runs
// (one at a time), so that a prefill allocates none of it per call, layer or chunk — a prompt's
// garbage had made the runtime collect every few prompts, during them. Contents are undefined
// when lent.
type workerBufs struct {
	f32    [][]float32
	f64    [][]float64
	poison bool // tests: each lent buffer is filled with NaN first
}

// ready makes room for workers workers' buffers. The caller of a dispatch calls it before the
// dispatch: the workers then only touch their own buffers (floats, doubles).
func (b *workerBufs) ready(workers int) {
	if len(b.f32) < workers {
		b.f32 = append(b.f32, make([][]float32, workers-len(b.f32))...)
		b.f64 = append(b.f64, make([][]float64, workers-len(b.f64))...)
	}
}

// floats returns worker w's float32 buffer of n elements (after ready).
func (b *workerBufs) floats(w, n int) []float32 { return workerSlice(b.f32, w, n, b.poison) }

// doubles returns worker w's float64 buffer of n elements (after ready).
func (b *workerBufs) doubles(w, n int) []float64 { return workerSlice(b.f64, w, n, b.poison) }

// workerSlice returns n elements of bufs[w], grown when it holds fewer, NaN-filled when poison.
func workerSlice[T float32 | float64](bufs [][]T, w, n int, poison bool) []T {
	if cap(bufs[w]) < n {
		bufs[w] = make([]T, n)
	}
	x := bufs[w][:n]
	if poison {
		fillNaN(x)
	}
	return x
}

// bytes returns the memory b holds.
func (b *workerBufs) bytes() int {
	n := 0
	for _, x := range b.f32 {
		n += 4 * cap(x)
	}
	for _, x := range b.f64 {
		n += 8 * cap(x)
	}
	return n
}

// workerTask adapts a parallel loop that needs its worker's index (for workerBufs) to cpu.Task.
type workerTask func(w, lo, hi int)

func (f workerTask) Do(w, lo, hi int) { f(w, lo, hi) }
