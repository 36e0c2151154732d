package server

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lily-engine/lily/internal/engine"
)

// ttftBuckets are the upper bounds (seconds) of the time-to-first-token histogram.
var ttftBuckets = [...]float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// metrics are the server's counters for GET /metrics. Safe for concurrent use.
type metrics struct {
	mu        sync.Mutex
	requests  map[[2]string]uint64 // route, status → count
	promptTok uint64
	genTok    uint64
	cacheHits uint64
	cachedTok uint64
	prefillS  float64 // seconds spent up to the first token
	decodeS   float64 // seconds from the first token to the last
	decodeTok uint64  // tokens generated after the first
	lastPre   float64 // last request's prefill tok/s
	lastDec   float64 // last request's decode tok/s
	ttft      [len(ttftBuckets) + 1]uint64
	ttftSum   float64
	running   int
}

func newMetrics() *metrics { return &metrics{requests: map[[2]string]uint64{}} }

// routeLabel keeps the route label's values few: the known routes, else "other".
func (s *Server) routeLabel(path string) string {
	if _, ok := s.routes[path]; ok {
		return path
	}
	if strings.HasPrefix(path, modelPrefix) {
		return modelPrefix + "{id}"
	}
	return "other"
}

func (m *metrics) request(route string, status int) {
	m.mu.Lock()
	m.requests[[2]string{route, fmt.Sprint(status)}]++
	m.mu.Unlock()
}

// timing measures one generation: call first at the first token and done at the end.
type timing struct {
	m      *metrics
	start  time.Time
	first  time.Time
	prompt int
}

func (m *metrics) begin(prompt int) *timing {
	m.mu.Lock()
	m.running++
	m.mu.Unlock()
	return &timing{m: m, start: time.Now(), prompt: prompt}
}

func (t *timing) step() {
	if t.first.IsZero() {
		t.first = time.Now()
	}
}

// done records the generation (res nil: it failed).
func (t *timing) done(res *engine.Result) {
	m := t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running--
	if res == nil {
		return
	}
	m.promptTok += uint64(t.prompt)
	m.genTok += uint64(len(res.Tokens))
	if res.CachedTokens > 0 {
		m.cacheHits++
		m.cachedTok += uint64(res.CachedTokens)
	}
	if t.first.IsZero() {
		return
	}
	pre := t.first.Sub(t.start).Seconds()
	m.prefillS += pre
	if pre > 0 {
		m.lastPre = float64(t.prompt-res.CachedTokens) / pre
	}
	i := 0
	for i < len(ttftBuckets) && pre > ttftBuckets[i] {
		i++
	}
	m.ttft[i]++
	m.ttftSum += pre
	if n := len(res.Tokens) - 1; n > 0 {
		dec := time.Since(t.first).Seconds()
		m.decodeS += dec
		m.decodeTok += uint64(n)
		if dec > 0 {
			m.lastDec = float64(n) / dec
		}
	}
}

// handleMetrics serves GET /metrics in the Prometheus text format.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	s.metrics.write(w, s.q.waiting())
	return nil
}

func (m *metrics) write(w io.Writer, waiting int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	metric := func(name, typ, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	metric("lily_requests_total", "counter", "HTTP requests by route and status.")
	keys := make([][2]string, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	for _, k := range keys {
		fmt.Fprintf(w, "lily_requests_total{route=%q,status=%q} %d\n", k[0], k[1], m.requests[k])
	}
	for _, c := range []struct {
		name, typ, help string
		v               any
	}{
		{"lily_prompt_tokens_total", "counter", "Prompt tokens of finished generations.", m.promptTok},
		{"lily_generation_tokens_total", "counter", "Generated tokens.", m.genTok},
		{"lily_prompt_cache_hits_total", "counter", "Generations that reused a cached prompt prefix.", m.cacheHits},
		{"lily_prompt_cache_tokens_total", "counter", "Prompt tokens reused from the cache.", m.cachedTok},
		{"lily_prefill_seconds_total", "counter", "Seconds from the start of generation to the first token.", m.prefillS},
		{"lily_decode_seconds_total", "counter", "Seconds from the first token to the last.", m.decodeS},
		{"lily_decode_tokens_total", "counter", "Tokens generated after the first.", m.decodeTok},
		{"lily_prefill_tokens_per_second", "gauge", "Prefill speed of the last generation (uncached prompt tokens).", m.lastPre},
		{"lily_decode_tokens_per_second", "gauge", "Decode speed of the last generation.", m.lastDec},
		{"lily_requests_running", "gauge", "Generations running.", m.running},
		{"lily_queue_waiting", "gauge", "Requests waiting in the admission queue.", waiting},
	} {
		metric(c.name, c.typ, c.help)
		fmt.Fprintf(w, "%s %v\n", c.name, c.v)
	}
	metric("lily_time_to_first_token_seconds", "histogram", "Time from the start of generation to the first token.")
	var cum uint64
	for i, b := range ttftBuckets {
		cum += m.ttft[i]
		fmt.Fprintf(w, "lily_time_to_first_token_seconds_bucket{le=\"%g\"} %d\n", b, cum)
	}
	cum += m.ttft[len(ttftBuckets)]
	fmt.Fprintf(w, "lily_time_to_first_token_seconds_bucket{le=\"+Inf\"} %d\n", cum)
	fmt.Fprintf(w, "lily_time_to_first_token_seconds_sum %v\nlily_time_to_first_token_seconds_count %d\n", m.ttftSum, cum)
}
