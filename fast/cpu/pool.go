package cpu

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Task is a unit of parallel work: Do handles the items [lo, hi) on worker w (0 <= w < Workers();
// w indexes per-worker scratch, and no two calls with the same w run at once). Kernels keep their
// Task values inside [Kernels] so that dispatching one allocates nothing.
type Task interface {
	Do(w, lo, hi int)
}

// TaskFunc adapts a function of a range to a [Task].
type TaskFunc func(lo, hi int)

// Do calls f(lo, hi).
func (f TaskFunc) Do(_, lo, hi int) { f(lo, hi) }

// Pool is a fixed set of worker goroutines that split a range of items between them.
//
// A Pool of n workers starts n-1 goroutines at construction; the goroutine that calls Run is
// worker 0. Run splits [0, items) into contiguous chunks that the workers take from a shared
// counter, so a worker delayed by the OS does not hold the others back.
//
// Decode dispatches thousands of jobs per token, each tens of microseconds long; waking a parked
// goroutine (a futex wake of a sleeping thread) takes about as long, so the caller would finish
// most jobs alone. Workers therefore spin on a job counter for spinFor after each job and park
// only when no job has come; the caller spins for their completion likewise.
//
// A Pool is safe for one caller at a time: Run must not be called concurrently, nor from inside a
// task. Close stops the goroutines; a Pool must not be used after Close.
type Pool struct {
	n       int
	workers []*poolWorker // the background workers (1 … n-1)
	// The job being run, written by Run before it bumps gen.
	task  Task
	items int
	chunk int
	// A guided job's takes: half a worker's share of the remaining items, within [takeMin,
	// takeMax] (RunTaskGuided, RunTaskTapered); otherwise fixed chunks of chunk items.
	guided           bool
	takeMin, takeMax int
	next             atomic.Int64
	// A two-ended job (RunTaskTwoEnded): the next item from the front in the low 32 bits, the end
	// of the items not yet taken from the back in the high 32.
	twoEnded bool
	ends     atomic.Uint64
	gen      atomic.Uint64 // job number; a worker runs job gen once
	pending  atomic.Int32  // background workers still in the current job
	closed   atomic.Bool
}

// poolWorker is one background worker's parking state.
type poolWorker struct {
	wake   chan struct{} // a token wakes the parked worker
	parked atomic.Bool   // set by the worker before it blocks on wake; cleared by whoever wakes it
}

// spinFor is how long an idle worker (and a waiting caller) spins before it blocks.
const spinFor = 200 * time.Microsecond

// NewPool starts a pool of n workers (n <= 0 means runtime.GOMAXPROCS(0)).
func NewPool(n int) *Pool {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	p := &Pool{n: n}
	for i := 1; i < n; i++ {
		w := &poolWorker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		go p.worker(i, w)
	}
	return p
}

// Workers returns the number of workers, counting the caller of Run.
func (p *Pool) Workers() int { return p.n }

func (p *Pool) worker(w int, pw *poolWorker) {
	var seen uint64
	for {
		g := p.await(seen, pw)
		if p.closed.Load() {
			return
		}
		seen = g
		p.drain(w)
		p.pending.Add(-1)
	}
}

// await returns the first job number after seen: it spins for spinFor, then parks on pw.wake.
func (p *Pool) await(seen uint64, pw *poolWorker) uint64 {
	deadline := time.Now().Add(spinFor)
	for i := 0; ; i++ {
		if g := p.gen.Load(); g != seen {
			return g
		}
		if i%256 == 255 {
			if time.Now().After(deadline) {
				break
			}
			runtime.Gosched()
		}
	}
	for {
		pw.parked.Store(true)
		if g := p.gen.Load(); g != seen {
			if pw.parked.CompareAndSwap(true, false) {
				return g
			}
			<-pw.wake // Run cleared parked first: its token is on the way
			return p.gen.Load()
		}
		<-pw.wake
		if g := p.gen.Load(); g != seen {
			return g
		}
	}
}

// drain takes chunks of the current job until none are left; w is the worker's index.
func (p *Pool) drain(w int) {
	if p.twoEnded {
		p.drainTwoEnded(w)
		return
	}
	if p.guided {
		p.drainGuided(w)
		return
	}
	for {
		lo := int(p.next.Add(int64(p.chunk))) - p.chunk
		if lo >= p.items {
			return
		}
		clearUpper()
		p.task.Do(w, lo, min(lo+p.chunk, p.items))
	}
}

// guidedMax caps a guided chunk: a worker that the OS deschedules holding a large chunk would leave
// the other to wait at the end.
const guidedMax = 4

// taperParts: RunTaskTapered's smallest take is 1/taperParts of a worker's share.
const taperParts = 16

// drainGuided is drain for RunTaskGuided and RunTaskTapered: each take is half a worker's share of
// what is left, within [takeMin, takeMax].
func (p *Pool) drainGuided(w int) {
	for {
		lo := int(p.next.Load())
		if lo >= p.items {
			return
		}
		hi := min(p.items, lo+max(p.takeMin, min(p.takeMax, (p.items-lo)/(2*p.n))))
		if !p.next.CompareAndSwap(int64(lo), int64(hi)) {
			continue
		}
		clearUpper()
		p.task.Do(w, lo, hi)
	}
}

// unclaimed returns the first item of a running guided or tapered dispatch that no worker has
// taken yet (the items' count once all are taken). Only a hint: another worker may take it next.
func (p *Pool) unclaimed() int { return int(p.next.Load()) }

// drainTwoEnded is drain for RunTaskTwoEnded: even workers take from the front, odd ones from the
// back, each take half a worker's share of what is left, within [takeMin, takeMax].
func (p *Pool) drainTwoEnded(w int) {
	back := w%2 == 1
	for {
		v := p.ends.Load()
		f, b := int(uint32(v)), int(v>>32)
		if f >= b {
			return
		}
		k := max(p.takeMin, min(p.takeMax, (b-f)/(2*p.n)))
		lo, hi := f, min(b, f+k)
		nv := uint64(hi) | uint64(b)<<32
		if back {
			lo, hi = max(f, b-k), b
			nv = uint64(f) | uint64(lo)<<32
		}
		if !p.ends.CompareAndSwap(v, nv) {
			continue
		}
		clearUpper()
		p.task.Do(w, lo, hi)
	}
}

// chunksPerWorker is how many pieces each worker's share is cut into: enough to even out a worker
// that the OS descheduled, few enough that the shared counter is not contended.
const chunksPerWorker = 4

// RunTask runs t over [0, items) on all workers and returns when every item is done.
// It allocates nothing.
func (p *Pool) RunTask(items int, t Task) { p.run(items, t, false, false, 0, 0) }

// RunTaskGuided is RunTask for items of unequal cost sorted from the costliest down (the experts
// of a prefill chunk by their token counts): the workers take chunks of half their share of the
// remaining items (at most guidedMax), down to single items at the end, so that they finish
// together.
func (p *Pool) RunTaskGuided(items int, t Task) { p.run(items, t, true, false, 1, guidedMax) }

// RunTaskTwoEnded is RunTaskGuided for items sorted from the costliest arithmetic to the most
// memory-bound (a prefill chunk's experts: the shared one and those with the most tokens first,
// those with one token last): the caller and the even workers take from the front, the odd ones
// from the back, so that one core's arithmetic overlaps the other's weight streams instead of
// both computing while the memory idles and then both streaming. Takes are as RunTaskGuided's.
func (p *Pool) RunTaskTwoEnded(items int, t Task) { p.run(items, t, true, true, 1, guidedMax) }

// RunTaskTapered is RunTask for items of equal cost whose workers should finish together (decode's
// mat-vecs, which stream the weights from DRAM: while one worker waits for the other at the end,
// the bandwidth of one core is all the job gets): the workers take half their share of the
// remaining items, down to 1/taperParts of a share at the end, where RunTask's fixed quarters of
// a share leave one worker idle for about an eighth of a share on average. The takes stay large
// (each restarts the kernels' prefetch streams) and few: about a dozen a job for two workers.
func (p *Pool) RunTaskTapered(items int, t Task) {
	p.run(items, t, true, false, max(1, items/(p.n*taperParts)), items)
}

// run dispatches t over [0, items) to every worker and waits for them; one item, or a pool of one
// worker, runs on the caller.
func (p *Pool) run(items int, t Task, guided, twoEnded bool, takeMin, takeMax int) {
	if items <= 0 {
		return
	}
	if p.n == 1 || items == 1 {
		clearUpper()
		t.Do(0, 0, items)
		return
	}
	p.task, p.items, p.guided, p.takeMin, p.takeMax = t, items, guided, takeMin, takeMax
	p.twoEnded = twoEnded
	p.ends.Store(uint64(items) << 32)
	p.chunk = max(1, (items+p.n*chunksPerWorker-1)/(p.n*chunksPerWorker))
	p.next.Store(0)
	p.pending.Store(int32(len(p.workers)))
	p.gen.Add(1)
	for _, w := range p.workers {
		if w.parked.CompareAndSwap(true, false) {
			w.wake <- struct{}{}
		}
	}
	p.drain(0)
	deadline := time.Now().Add(spinFor)
	for i := 0; p.pending.Load() != 0; i++ {
		if i%256 == 255 && time.Now().After(deadline) {
			runtime.Gosched() // a worker the OS descheduled: let it run
		}
	}
	p.task = nil
}

// Run runs fn over [0, items) on all workers: each call fn(lo, hi) handles a contiguous chunk, and
// chunks cover the range exactly once. It returns when every chunk is done.
func (p *Pool) Run(items int, fn func(lo, hi int)) {
	p.RunTask(items, TaskFunc(fn))
}

// Close stops the background workers. It is safe to call more than once.
func (p *Pool) Close() {
	if p.closed.Swap(true) {
		return
	}
	p.gen.Add(1)
	for _, w := range p.workers {
		if w.parked.CompareAndSwap(true, false) {
			w.wake <- struct{}{}
		}
	}
}
