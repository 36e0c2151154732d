package cpu

import (
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"
)

func TestPoolCoversRangeOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := NewPool(rapid.IntRange(1, 5).Draw(t, "workers"))
		defer p.Close()
		for range 3 { // reuse the pool across jobs
			n := rapid.IntRange(0, 1000).Draw(t, "n")
			hits := make([]atomic.Int32, n)
			p.Run(n, func(lo, hi int) {
				if lo >= hi {
					t.Errorf("empty chunk [%d, %d)", lo, hi)
				}
				for i := lo; i < hi; i++ {
					hits[i].Add(1)
				}
			})
			for i := range hits {
				if h := hits[i].Load(); h != 1 {
					t.Fatalf("n %d: item %d run %d times", n, i, h)
				}
			}
		}
	})
}

// TestPoolSchedulesCoverRangeOnce: RunTaskGuided and RunTaskTapered run every item once and none
// past the end, in takes within their bounds (guided: at most guidedMax; tapered: at least
// 1/taperParts of a worker's share, but the last), and a plain job after either on the same pool
// runs in full. A pool of one worker, or a job of one item, runs it all in one call.
func TestPoolSchedulesCoverRangeOnce(t *testing.T) {
	schedules := []struct {
		name string
		run  func(p *Pool, n int, task Task)
		ok   func(p *Pool, n, lo, hi int) bool // the take [lo, hi) of n items is within bounds
	}{
		{"guided", (*Pool).RunTaskGuided, func(_ *Pool, _, lo, hi int) bool { return hi-lo <= guidedMax }},
		{"two-ended", (*Pool).RunTaskTwoEnded, func(_ *Pool, _, lo, hi int) bool { return hi-lo <= guidedMax }},
		{"tapered", (*Pool).RunTaskTapered, func(p *Pool, n, lo, hi int) bool {
			return hi == n || hi-lo >= max(1, n/(p.Workers()*taperParts))
		}},
	}
	for _, sc := range schedules {
		t.Run(sc.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				p := NewPool(rapid.IntRange(1, 5).Draw(t, "workers"))
				defer p.Close()
				for range 3 {
					n := rapid.IntRange(0, 5000).Draw(t, "n")
					hits := make([]atomic.Int32, n)
					var scheduled atomic.Bool
					task := taskOf(func(_, lo, hi int) {
						whole := p.Workers() == 1 || n == 1
						if lo >= hi || (scheduled.Load() && !whole && !sc.ok(p, n, lo, hi)) {
							t.Errorf("n %d: take [%d, %d)", n, lo, hi)
						}
						for i := lo; i < hi; i++ {
							hits[i].Add(1)
						}
					})
					scheduled.Store(true)
					sc.run(p, n, task)
					scheduled.Store(false)
					p.RunTask(n, task)
					for i := range hits {
						if h := hits[i].Load(); h != 2 {
							t.Fatalf("n %d: item %d run %d times, want once per job", n, i, h)
						}
					}
				}
			})
		})
	}
}

// TestPoolTwoEnded: in RunTaskTwoEnded the caller and the even workers take their items from the
// front (each take after the ones before it), the odd workers from the back (each before the ones
// before it).
func TestPoolTwoEnded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		workers := rapid.IntRange(2, 5).Draw(t, "workers")
		n := rapid.IntRange(2, 3000).Draw(t, "n")
		p := NewPool(workers)
		defer p.Close()
		last := make([][2]int, workers) // each worker's previous take
		for w := range last {
			last[w] = [2]int{-1, -1}
		}
		p.RunTaskTwoEnded(n, taskOf(func(w, lo, hi int) {
			prev := last[w]
			if prev[0] >= 0 && (w%2 == 0 && lo < prev[1] || w%2 == 1 && hi > prev[0]) {
				t.Errorf("worker %d took [%d, %d) after [%d, %d)", w, lo, hi, prev[0], prev[1])
			}
			last[w] = [2]int{lo, hi}
		}))
	})
}

func TestPoolWorkerIndex(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	var busy [3]atomic.Int32
	p.RunTask(300, taskOf(func(w, lo, hi int) {
		if w < 0 || w >= 3 {
			t.Errorf("worker index %d", w)
			return
		}
		if busy[w].Add(1) != 1 {
			t.Errorf("worker %d runs two chunks at once", w)
		}
		busy[w].Add(-1)
	}))
}

type taskOf func(w, lo, hi int)

func (f taskOf) Do(w, lo, hi int) { f(w, lo, hi) }

// TestKernelsDoNotAllocate checks the decode-path promise: a mat-vec dispatch allocates nothing.
func TestKernelsDoNotAllocate(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	for name, k := range variants(p) {
		m := randQMat(newRand(1), 4, 300, 512)
		v := NewVec(512)
		x := randVec(newRand(2), 512)
		y := make([]float32, 300)
		allocs := testing.AllocsPerRun(20, func() {
			v.PrepareQ16(x)
			k.QMatVec(y, m, v)
			k.QMatVecQ16(y, m, v)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per mat-vec", name, allocs)
		}
	}
}
