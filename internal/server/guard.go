package server

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Defaults of the request-body guards.
const (
	defaultBodyTimeout = 30 * time.Second
	defaultBodyReads   = 16
)

// ErrOriginNotAllowed: a browser sent the request from a page whose origin is not allowed (any web
// page the user visits could otherwise drive the local server).
var ErrOriginNotAllowed = errors.New("origin not allowed")

// ErrBusyReading: too many request bodies are being read at once.
var ErrBusyReading = errors.New("the server is busy: too many request bodies are being received")

// MediaTypeError is a JSON route called with another Content-Type.
type MediaTypeError struct{ Got string }

func (e *MediaTypeError) Error() string {
	if e.Got == "" {
		return "Content-Type application/json is required"
	}
	return fmt.Sprintf("Content-Type application/json is required, not %q", e.Got)
}

// BodyError is a request body that could not be read: malformed chunking, a body shorter than
// its Content-Length, or one that did not arrive within the body timeout.
type BodyError struct{ Err error }

func (e *BodyError) Error() string {
	if e.Timeout() {
		return "the request body did not arrive in time"
	}
	return "reading the request body: " + e.Err.Error()
}
func (e *BodyError) Unwrap() error { return e.Err }

// Timeout reports whether the body read ran past its deadline.
func (e *BodyError) Timeout() bool { return errors.Is(e.Err, os.ErrDeadlineExceeded) }

// originOK reports whether a request's Origin may use the server: absent, an allowed origin
// (originAllowed), or the server's own origin: http(s)://Host when that Host is allowed.
func (s *Server) originOK(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || s.originAllowed(origin) {
		return true
	}
	if s.cfg.Loopback && !s.hostAllowed(r.Host) {
		return false
	}
	return r.Host != "" && (strings.EqualFold(origin, "http://"+r.Host) || strings.EqualFold(origin, "https://"+r.Host))
}

// jsonRoute reports whether r is a POST to a known route: its body must be JSON.
func (s *Server) jsonRoute(r *http.Request) bool {
	_, ok := s.routes[r.URL.Path][http.MethodPost]
	return ok && r.Method == http.MethodPost
}

// checkJSONType requires Content-Type application/json (any parameters, e.g. charset): a browser
// can send text/plain, form and blob bodies across origins without a preflight, never JSON.
func checkJSONType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return &MediaTypeError{Got: ct}
	}
	return nil
}

// bodyGuard bounds the reading of request bodies: at most n at once (more get 503 at once) and
// each within timeout, so bodies that never finish cannot pile up connections and memory.
type bodyGuard struct {
	slots   chan struct{}
	timeout time.Duration
}

func newBodyGuard(n int, timeout time.Duration) *bodyGuard {
	return &bodyGuard{slots: make(chan struct{}, n), timeout: timeout}
}

// guardedBody is a request body holding a read slot and a read deadline until it is read to the
// end, fails, or the handler returns (release).
type guardedBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	g    *bodyGuard
	once sync.Once
	n    int64 // bytes read
}

// acquire takes a slot for r's body and sets its read deadline; the caller must call release.
func (g *bodyGuard) acquire(w http.ResponseWriter, r *http.Request) (*guardedBody, error) {
	select {
	case g.slots <- struct{}{}:
	default:
		return nil, ErrBusyReading
	}
	b := &guardedBody{ReadCloser: r.Body, rc: http.NewResponseController(w), g: g}
	// Not every writer supports deadlines (e.g. httptest's recorder); the slot still bounds them.
	_ = b.rc.SetReadDeadline(time.Now().Add(g.timeout))
	return b, nil
}

func (b *guardedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if err != nil {
		b.release(err == io.EOF)
	}
	return n, err
}

// release frees the slot. A body read to the end lifts the deadline: the connection's later reads
// (net/http noticing a client that goes away during a long generation) must not time out. Any
// other end keeps it, so that net/http's draining of the rest is bounded too (the next request on
// the connection sets its own).
func (b *guardedBody) release(complete bool) {
	b.once.Do(func() {
		if complete {
			_ = b.rc.SetReadDeadline(time.Time{})
		}
		<-b.g.slots
	})
}
