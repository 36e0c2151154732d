package server

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// The work a request does before it joins the queue (decoding the body, rendering the chat
// template, tokenizing) is bounded here: the queue's 503 cannot protect the server from it.
const (
	// prepWorkers is how many requests may decode, render and tokenize at once; more wait.
	prepWorkers = 2
	// nfcShrink bounds how much NFC normalization can shrink text in bytes (a Hangul L+V+T jamo
	// sequence, 9 bytes, composes to one 3-byte syllable), with margin.
	nfcShrink = 4
	// reclaimBody is the body size after which the freed memory is handed back to the OS at the
	// end of the request, at most once per reclaimEvery.
	reclaimBody  = 1 << 20
	reclaimEvery = time.Second
)

// prepGate admits prepWorkers requests to their pre-queue work.
type prepGate struct{ slots chan struct{} }

// prepSlot is one request's claim on the gate; release is idempotent.
type prepSlot struct {
	g    *prepGate
	mu   sync.Mutex
	held bool
}

type prepKey struct{}

// withPrepSlot returns ctx carrying an unclaimed slot of g.
func (g *prepGate) withPrepSlot(ctx context.Context) (context.Context, *prepSlot) {
	p := &prepSlot{g: g}
	return context.WithValue(ctx, prepKey{}, p), p
}

// acquirePrep waits for a pre-queue slot for the request of ctx (none needed when ctx has none).
func acquirePrep(ctx context.Context) error {
	p, _ := ctx.Value(prepKey{}).(*prepSlot)
	if p == nil {
		return nil
	}
	select {
	case p.g.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.mu.Lock()
	p.held = true
	p.mu.Unlock()
	return nil
}

// releasePrep gives the request's slot back: when it reaches the queue, or when it ends.
func releasePrep(ctx context.Context) {
	if p, _ := ctx.Value(prepKey{}).(*prepSlot); p != nil {
		p.release()
	}
}

func (p *prepSlot) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		p.held = false
		<-p.g.slots
	}
}

// maxTokenBytes is the longest text any one token stands for (stored forms are at least as long
// as the bytes they decode to).
func maxTokenBytes(tok Tokenizer) int {
	longest := 1
	for id := range tok.VocabSize() {
		if t, ok := tok.Token(int32(id)); ok {
			longest = max(longest, len(t))
		}
	}
	return longest
}

// checkTextFits refuses, before tokenizing, a prompt text whose length alone proves that it has
// more tokens than the context holds with room for minMax more.
func (s *Server) checkTextFits(text string, minMax int) error {
	return s.eng.CheckLength(len(text)/(nfcShrink*s.maxTokBytes), minMax, minMax)
}

// reclaimer hands freed memory back to the OS after large requests, so that a burst of big
// bodies does not leave the process at its peak size.
// Within reclaimEvery of the last one, one more is scheduled for the end of the interval.
type reclaimer struct {
	last    atomic.Int64 // UnixNano of the last reclaim
	pending atomic.Bool
}

func (rc *reclaimer) after(bodyBytes int64) {
	if bodyBytes < reclaimBody {
		return
	}
	now := time.Now().UnixNano()
	last := rc.last.Load()
	if now-last >= int64(reclaimEvery) && rc.last.CompareAndSwap(last, now) {
		debug.FreeOSMemory()
		return
	}
	if rc.pending.CompareAndSwap(false, true) {
		time.AfterFunc(time.Duration(last+int64(reclaimEvery)-now), func() {
			rc.last.Store(time.Now().UnixNano())
			rc.pending.Store(false)
			debug.FreeOSMemory()
		})
	}
}
