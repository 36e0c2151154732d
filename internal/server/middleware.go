package server

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// recorder notes the status and size of a response for the request log. It forwards everything
// else to the underlying writer (Unwrap lets http.ResponseController flush through it).
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// middleware wraps the router: panic recovery and the request log outermost, then the Host
// allowlist, the Origin check and CORS, the API key, the JSON Content-Type, and the body guards
// (read slots, read deadline, size limit).
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("panic in handler", "method", r.Method, "path", r.URL.Path,
					"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if rec.status == 0 {
					writeError(rec, fmt.Errorf("panic: %v", p))
				}
			}
			status := rec.status
			if r.Context().Err() != nil && status == http.StatusOK {
				status = statusClientClosed
			}
			s.metrics.request(s.routeLabel(r.URL.Path), status)
			s.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", status,
				"bytes", rec.bytes, "duration", time.Since(start).Round(time.Microsecond), "remote", r.RemoteAddr)
		}()
		// reject answers before the body guard holds the body: with Connection: close, so that
		// net/http does not first read an unread body to its end to keep the connection — with no
		// read deadline yet, a client that never finishes its body (chunked) would hold that
		// goroutine and connection, and never see the answer, for as long as it likes.
		reject := func(err error) {
			if r.Body != nil && r.Body != http.NoBody {
				rec.Header().Set("Connection", "close")
			}
			writeError(rec, err)
		}
		if s.cfg.Loopback && !s.hostAllowed(r.Host) {
			reject(ErrHostNotAllowed)
			return
		}
		if !s.originOK(r) {
			reject(ErrOriginNotAllowed)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			h := rec.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
				h.Set("Access-Control-Max-Age", "600")
				rec.WriteHeader(http.StatusNoContent)
				return
			}
		}
		if s.cfg.APIKey != "" && r.URL.Path != "/health" && !s.pageRequest(r) && !s.authorized(r) {
			reject(ErrUnauthorized)
			return
		}
		if s.jsonRoute(r) {
			if err := checkJSONType(r); err != nil {
				reject(err)
				return
			}
		}
		if r.Body != nil && r.Body != http.NoBody {
			gb, err := s.bodies.acquire(w, r)
			if err != nil {
				reject(err)
				return
			}
			defer gb.release(false)
			defer func() { s.reclaim.after(gb.n) }()
			r.Body = gb
		}
		if s.jsonRoute(r) {
			ctx, slot := s.prep.withPrepSlot(r.Context())
			defer slot.release()
			r = r.WithContext(ctx)
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody) // w: so net/http closes the connection on overflow
		next.ServeHTTP(rec, r)
	})
}

func (s *Server) authorized(r *http.Request) bool {
	// The scheme is case-insensitive (RFC 7235 §2.1).
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	ok = ok && strings.EqualFold(scheme, "Bearer")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(s.cfg.APIKey)) == 1
}

// isLoopbackName reports whether host (without port or brackets) names this machine.
func isLoopbackName(host string) bool {
	switch strings.ToLower(host) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// hostAllowed checks a Host header against the loopback names and the configured ones.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if isLoopbackName(host) {
		return true
	}
	return slices.ContainsFunc(s.cfg.AllowHosts, func(a string) bool { return strings.EqualFold(a, host) })
}

// originAllowed accepts http(s) origins on loopback names and the configured origins.
func (s *Server) originAllowed(origin string) bool {
	for _, o := range s.cfg.CORSOrigins {
		if o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return isLoopbackName(u.Hostname())
}
