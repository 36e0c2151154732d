// Package server is lily's OpenAI-compatible HTTP API (design.md §5): wire types, validation, SSE,
// the admission queue, auth, and the mapping of errors to HTTP statuses.
package server

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/grammar"
)

// Config configures a Server. Zero values take the defaults documented on each field.
type Config struct {
	Model Model
	// CtxSize caps the context window below the backend's MaxContext (0: the backend's MaxContext;
	// larger values are capped to it). lily serve leaves it 0: its --ctx-size opens the backend
	// with that MaxContext.
	CtxSize int
	// APIKey, when set, is required as `Authorization: Bearer KEY` on every route but /health.
	APIKey string
	// QueueSize is how many requests may wait while one runs (default 16; negative: none).
	QueueSize int
	// MaxBody is the request body limit in bytes (default 8 MiB).
	MaxBody int64
	// BodyTimeout bounds the reading of one request body (default 30 s); BodyReads is how many
	// bodies may be read at once, more get 503 (default 16).
	BodyTimeout time.Duration
	BodyReads   int
	// Loopback says the server is bound to a loopback address: Host headers must then name
	// localhost, 127.0.0.1 or [::1] (any port) or one of AllowHosts, against DNS rebinding.
	Loopback   bool
	AllowHosts []string
	// CORSOrigins are allowed in addition to http(s) origins on localhost, 127.0.0.1 and [::1];
	// "*" allows any origin.
	CORSOrigins []string
	// KeepAlive is the SSE keep-alive interval (default 5 s; negative: off).
	KeepAlive time.Duration
	// Defaults is the sampling used for omitted fields (default engine.ModelDefaults()).
	Defaults *engine.Sampling
	// Page, when set, serves the browser chat page at GET / and its files under /ui/ (see
	// isPagePath); the API key is not asked for them, as they hold no data (internal/webui).
	Page http.Handler
	// Logger gets one line per request (default slog.Default()).
	Logger *slog.Logger
	// Now and RandomID make ids and timestamps reproducible in tests (defaults: time.Now and
	// crypto/rand alphanumerics).
	Now      func() time.Time
	RandomID func(n int) string
}

// Server answers the HTTP API. It is safe for concurrent use: requests are admitted one at a time
// to the engine through a bounded FIFO.
type Server struct {
	cfg       Config
	m         Model
	eng       *engine.Engine
	q         *queue
	ctx       int
	stopIDs   []int32
	imStart   int32 // -1 when the tokenizer lacks it
	defaults  engine.Sampling
	log       *slog.Logger
	routes    map[string]map[string]func(http.ResponseWriter, *http.Request) error
	bodies    *bodyGuard
	nanOnce   sync.Once // warns of the first non-finite logprob
	prep      *prepGate
	reclaim   reclaimer
	metrics   *metrics
	responses *responseStore // conversations for previous_response_id
	// The tokenizer's byte strings for structured output, built on first use.
	vocabOnce sync.Once
	gvocab    *grammar.Vocab
	// maxTokBytes is the longest text one token stands for (checkTextFits).
	maxTokBytes int
	handler     http.Handler
}

// New checks cfg and returns a server.
func New(cfg Config) (*Server, error) {
	m := cfg.Model
	if m.Backend == nil || m.Tok == nil || m.NewDecoder == nil || m.Chat == nil {
		return nil, errors.New("server: Model needs Backend, Tok, NewDecoder and Chat")
	}
	if m.Name == "" {
		m.Name = "Qwen3.6-35B-A3B"
	}
	s := &Server{cfg: cfg, m: m, eng: engine.NewWindow(m.Backend, cfg.CtxSize), imStart: -1, metrics: newMetrics(),
		responses: newResponseStore()}
	s.ctx = s.eng.Window()
	switch {
	case cfg.QueueSize == 0:
		s.q = newQueue(16)
	case cfg.QueueSize < 0:
		s.q = newQueue(0)
	default:
		s.q = newQueue(cfg.QueueSize)
	}
	if s.cfg.MaxBody <= 0 {
		s.cfg.MaxBody = 8 << 20
	}
	if s.cfg.BodyTimeout <= 0 {
		s.cfg.BodyTimeout = defaultBodyTimeout
	}
	if s.cfg.BodyReads <= 0 {
		s.cfg.BodyReads = defaultBodyReads
	}
	s.bodies = newBodyGuard(s.cfg.BodyReads, s.cfg.BodyTimeout)
	s.prep = &prepGate{slots: make(chan struct{}, prepWorkers)}
	s.maxTokBytes = maxTokenBytes(m.Tok)
	if s.cfg.KeepAlive == 0 {
		s.cfg.KeepAlive = 5 * time.Second
	}
	s.defaults = engine.ModelDefaults()
	if cfg.Defaults != nil {
		s.defaults = *cfg.Defaults
	}
	s.log = cfg.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.cfg.Now == nil {
		s.cfg.Now = time.Now
	}
	if s.cfg.RandomID == nil {
		s.cfg.RandomID = randomID
	}
	// The model's stop ids (model.md §1.3).
	for _, t := range []string{"<|im_end|>", "<|endoftext|>"} {
		if id, ok := m.Tok.TokenID(t); ok {
			s.stopIDs = append(s.stopIDs, id)
		}
	}
	if id, ok := m.Tok.TokenID("<|im_start|>"); ok {
		s.imStart = id
	}
	s.routes = map[string]map[string]func(http.ResponseWriter, *http.Request) error{
		"/health":                   {http.MethodGet: s.handleHealth, http.MethodHead: s.handleHealth},
		"/version":                  {http.MethodGet: s.handleVersion},
		"/metrics":                  {http.MethodGet: s.handleMetrics},
		"/v1/responses":             {http.MethodPost: s.handleResponses},
		"/v1/messages":              {http.MethodPost: s.handleMessages},
		"/v1/messages/count_tokens": {http.MethodPost: s.handleCountTokens},
		"/v1/models":                {http.MethodGet: s.handleModels},
		"/v1/chat/completions":      {http.MethodPost: s.handleChat},
		"/v1/completions":           {http.MethodPost: s.handleCompletions},
		"/tokenize":                 {http.MethodPost: s.handleTokenize},
		"/detokenize":               {http.MethodPost: s.handleDetokenize},
		"/v1/lily/info":             {http.MethodGet: s.handleInfo},
	}
	s.handler = s.middleware(http.HandlerFunc(s.route))
	return s, nil
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// HTTPServer returns an http.Server for addr with the timeouts a public-facing server needs (no
// write timeout: streams last as long as generation does).
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// Close releases the engine's state.
func (s *Server) Close() error { return s.eng.Close() }

// WarmUp runs a short generation of a tokens-long prompt through the engine before the server takes
// requests (engine.Engine.WarmUp: it leaves no cache or session behind), so that the first request
// does not pay the backend's first-touch costs. It returns the prompt length it ran.
func (s *Server) WarmUp(ctx context.Context, tokens int) (int, error) {
	return s.eng.WarmUp(ctx, tokens)
}

// route dispatches on path and method; handlers return errors for writeError.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	methods, ok := s.routes[r.URL.Path]
	if !ok && strings.HasPrefix(r.URL.Path, modelPrefix) {
		methods, ok = map[string]func(http.ResponseWriter, *http.Request) error{http.MethodGet: s.handleModel}, true
	}
	var err error
	switch {
	case !ok && s.cfg.Page != nil && isPagePath(r.URL.Path):
		err = s.servePage(w, r)
	case !ok:
		err = ErrNotFound
	case methods[r.Method] == nil:
		allow := make([]string, 0, len(methods))
		for m := range methods {
			allow = append(allow, m)
		}
		slices.Sort(allow)
		err = &MethodError{Method: r.Method, Allow: allow}
	default:
		err = methods[r.Method](w, r)
	}
	if err != nil {
		if status := writeError(w, err); status >= 500 {
			s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
		}
	}
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// randomID returns n random alphanumerics from crypto/rand.
func randomID(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = idAlphabet[randIntn(len(idAlphabet))]
	}
	return string(b)
}

// randIntn draws uniformly from [0, n) with crypto/rand (rejection sampling on a byte).
func randIntn(n int) int {
	limit := 256 - 256%n
	var b [1]byte
	for {
		_, _ = rand.Read(b[:])
		if int(b[0]) < limit {
			return int(b[0]) % n
		}
	}
}
