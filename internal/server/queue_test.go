package server

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestQueueFIFO(t *testing.T) {
	q := newQueue(3)
	first, err := q.join()
	if err != nil || first.wait(context.Background()) != nil {
		t.Fatal("first not admitted at once")
	}
	var waiting []*ticket
	for range 3 {
		tk, err := q.join()
		if err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, tk)
	}
	if _, err := q.join(); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("fifth: %v", err)
	}
	order := make(chan int, 3)
	var wg sync.WaitGroup
	for i, tk := range waiting {
		wg.Go(func() {
			if tk.wait(context.Background()) == nil {
				order <- i
				time.Sleep(time.Millisecond)
				tk.release()
			}
		})
	}
	time.Sleep(10 * time.Millisecond) // all three are blocked in wait
	first.release()
	for want := range 3 {
		if got := <-order; got != want {
			t.Fatalf("turn %d went to %d", want, got)
		}
	}
	wg.Wait()
	if tk, err := q.join(); err != nil || tk.ch != nil {
		t.Fatal("queue not idle after everyone left")
	}
}

func TestQueueCancelledWaiterLeaves(t *testing.T) {
	q := newQueue(1)
	run, _ := q.join()
	w, _ := q.join()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait: %v", err)
	}
	w.release()
	w.release() // idempotent
	if q.waiting() != 0 {
		t.Fatalf("%d still waiting", q.waiting())
	}
	next, err := q.join()
	if err != nil {
		t.Fatalf("place not freed: %v", err)
	}
	run.release()
	if err := next.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	next.release()
}

// A waiter cancelled just as its turn comes must pass the turn on, not leak it.
func TestQueueTurnGrantedThenCancelled(t *testing.T) {
	q := newQueue(2)
	run, _ := q.join()
	w, _ := q.join()
	after, _ := q.join()
	run.release() // w's turn, but w never waits
	w.release()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := after.wait(ctx); err != nil {
		t.Fatalf("turn leaked: %v", err)
	}
}

func TestQueueZeroSize(t *testing.T) {
	q := newQueue(0)
	a, _ := q.join()
	if _, err := q.join(); !errors.Is(err, ErrQueueFull) {
		t.Fatal("size 0 must refuse a second request while one runs")
	}
	a.release()
	if _, err := q.join(); err != nil {
		t.Fatal(err)
	}
}
