package server

import (
	"context"
	"sync"
)

// queue admits one sequence at a time; up to size others wait in FIFO order. It is safe for
// concurrent use.
type queue struct {
	mu      sync.Mutex
	size    int
	busy    bool
	waiters []chan struct{} // FIFO; a closed channel means "your turn"
}

func newQueue(size int) *queue { return &queue{size: size} }

// ticket is a place in the queue. Its owner calls wait, then release exactly once (also when wait
// failed or was never called).
type ticket struct {
	q    *queue
	ch   chan struct{} // nil: admitted at join
	done bool
}

// join takes a place in the queue, or returns ErrQueueFull at once.
func (q *queue) join() (*ticket, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.busy && len(q.waiters) == 0 {
		q.busy = true
		return &ticket{q: q}, nil
	}
	if len(q.waiters) >= q.size {
		return nil, ErrQueueFull
	}
	ch := make(chan struct{})
	q.waiters = append(q.waiters, ch)
	return &ticket{q: q, ch: ch}, nil
}

// wait blocks until it is this ticket's turn or ctx ends.
func (t *ticket) wait(ctx context.Context) error {
	if t.ch == nil {
		return nil
	}
	select {
	case <-t.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release gives the turn to the next waiter, or leaves the queue if the turn never came.
func (t *ticket) release() {
	q := t.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if t.done {
		return
	}
	t.done = true
	if t.ch != nil {
		select {
		case <-t.ch: // it was our turn: pass it on below
		default:
			for i, c := range q.waiters {
				if c == t.ch {
					q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
					return
				}
			}
		}
	}
	if len(q.waiters) > 0 {
		next := q.waiters[0]
		q.waiters = q.waiters[1:]
		close(next)
		return
	}
	q.busy = false
}

// waiting returns the number of queued requests (for logs and tests).
func (q *queue) waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiters)
}
