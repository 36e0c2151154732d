package server

import (
	"net/http"
	"sync"
	"time"
)

// sseWriter writes a Server-Sent Events stream. Its methods are safe for concurrent use (the
// handler's goroutine writes events while a keep-alive goroutine writes comments); all writes stop
// once the handler calls close.
type sseWriter struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	last   time.Time
	err    error // the first write error (the client went away)
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

// startSSE sends the stream's headers and, when keepAlive > 0, a `: keep-alive` comment whenever
// nothing was written for keepAlive (so proxies and clients do not time out during long prefills).
func startSSE(w http.ResponseWriter, keepAlive time.Duration) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w), last: time.Now(), stop: make(chan struct{})}
	_ = s.rc.Flush()
	if keepAlive > 0 {
		s.wg.Add(1)
		go s.keepAlive(keepAlive)
	}
	return s
}

func (s *sseWriter) keepAlive(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every / 2)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			if time.Since(s.last) >= every {
				s.writeLocked([]byte(": keep-alive\n\n"))
			}
			s.mu.Unlock()
		}
	}
}

func (s *sseWriter) writeLocked(b []byte) {
	if s.closed || s.err != nil {
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return
	}
	if err := s.rc.Flush(); err != nil {
		s.err = err
	}
	s.last = time.Now()
}

// event writes one `data:` event holding v as JSON and returns the first write error so far.
func (s *sseWriter) event(v any) error { return s.named("", v) }

// named writes one event holding v as JSON, preceded by an `event: typ` line when typ is not empty
// (the Responses and Messages APIs' typed events), and returns the first write error so far.
func (s *sseWriter) named(typ string, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(b)+len(typ)+16)
	if typ != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, typ...)
		buf = append(buf, '\n')
	}
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeLocked(buf)
	return s.err
}

// done writes the terminating `data: [DONE]` event.
func (s *sseWriter) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeLocked([]byte("data: [DONE]\n\n"))
}

// close stops the keep-alives; the handler must call it before returning.
func (s *sseWriter) close() {
	close(s.stop)
	s.wg.Wait()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
