package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
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
// A Pool is safe for one caller at a time: Run must not be called concurrently, nor from inside a
// task. Close stops the goroutines; a Pool must not be used after Close.
type Pool struct {
	n     int
	start []chan struct{} // one per background worker
	wg    sync.WaitGroup

	// The job being run, written by Run before it signals the workers.
	task   Task
	items  int
	chunk  int
	next   atomic.Int64
	closed bool
}

// NewPool starts a pool of n workers (n <= 0 means runtime.GOMAXPROCS(0)).
func NewPool(n int) *Pool {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	p := &Pool{n: n, start: make([]chan struct{}, n-1)}
	for i := range p.start {
		c := make(chan struct{}, 1)
		p.start[i] = c
		go p.worker(i+1, c)
	}
	return p
}

// Workers returns the number of workers, counting the caller of Run.
func (p *Pool) Workers() int { return p.n }

func (p *Pool) worker(w int, start chan struct{}) {
	for range start {
		p.drain(w)
		p.wg.Done()
	}
}

// drain takes chunks of the current job until none are left; w is the worker's index.
func (p *Pool) drain(w int) {
	for {
		lo := int(p.next.Add(int64(p.chunk))) - p.chunk
		if lo >= p.items {
			return
		}
		p.task.Do(w, lo, min(lo+p.chunk, p.items))
	}
}

// chunksPerWorker is how many pieces each worker's share is cut into: enough to even out a worker
// that the OS descheduled, few enough that the shared counter is not contended.
const chunksPerWorker = 4

// RunTask runs t over [0, items) on all workers and returns when every item is done.
// It allocates nothing.
func (p *Pool) RunTask(items int, t Task) {
	if items <= 0 {
		return
	}
	if p.n == 1 || items == 1 {
		t.Do(0, 0, items)
		return
	}
	p.task, p.items = t, items
	p.chunk = max(1, (items+p.n*chunksPerWorker-1)/(p.n*chunksPerWorker))
	p.next.Store(0)
	wake := min(len(p.start), (items+p.chunk-1)/p.chunk-1)
	p.wg.Add(wake)
	for _, c := range p.start[:wake] {
		c <- struct{}{}
	}
	p.drain(0)
	p.wg.Wait()
	p.task = nil
}

// Run runs fn over [0, items) on all workers: each call fn(lo, hi) handles a contiguous chunk, and
// chunks cover the range exactly once. It returns when every chunk is done.
func (p *Pool) Run(items int, fn func(lo, hi int)) {
	p.RunTask(items, TaskFunc(fn))
}

// Close stops the background workers. It is safe to call more than once.
func (p *Pool) Close() {
	if p.closed {
		return
	}
	p.closed = true
	for _, c := range p.start {
		close(c)
	}
}
