package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lily-engine/lily/internal/server"
	"github.com/lily-engine/lily/internal/server/servertest"
)

const chatHi = `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":2}`

// TestCrossOriginRefused: a request whose Origin is not allowed gets 403 and generates nothing,
// whatever its Content-Type; the server's own origin and localhost origins pass.
func TestCrossOriginRefused(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.AllowHosts = []string{"lily.lan"} })
	e.Script("ok")
	for _, ct := range []string{"text/plain", "application/json", "application/x-www-form-urlencoded"} {
		code, body := e.Post("/v1/chat/completions", chatHi, "Origin", "http://evil.example", "Content-Type", ct)
		if code != 403 || str(errorOf(t, body).Code) != "origin_not_allowed" {
			t.Fatalf("evil origin, %s: %d %s", ct, code, body)
		}
	}
	if code, _, _ := e.Do("GET", "/v1/models", "", "Origin", "null"); code != 403 {
		t.Fatalf("Origin null: %d", code)
	}
	if e.B.Decodes.Load() != 0 {
		t.Fatal("a refused request generated")
	}
	port := e.TS.URL[strings.LastIndex(e.TS.URL, ":"):]
	for _, c := range []struct {
		host, origin string
		want         int
	}{
		{"", "http://localhost:5173", 200},
		{"", "http://" + strings.TrimPrefix(e.TS.URL, "http://"), 200}, // own origin
		{"lily.lan" + port, "http://lily.lan" + port, 200},             // own origin by an allowed name
		{"lily.lan" + port, "http://lily.lan:1", 403},                  // another port is another origin
		{"evil.example" + port, "http://evil.example" + port, 403},     // rebinding: Host refused first
	} {
		req, _ := http.NewRequest("POST", e.TS.URL+"/v1/chat/completions", strings.NewReader(chatHi))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", c.origin)
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := e.TS.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Host %q Origin %q: %d, want %d", c.host, c.origin, resp.StatusCode, c.want)
		}
	}
}

// TestJSONRoutesRequireJSON: POSTs to the JSON routes need Content-Type application/json (415
// otherwise), the form a browser cannot send across origins without a preflight.
func TestJSONRoutesRequireJSON(t *testing.T) {
	e := servertest.New(t)
	e.Script("ok")
	for _, ct := range []string{"text/plain", "", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"} {
		code, body := e.Post("/v1/completions", `{"prompt":"Hi","max_tokens":1}`, "Content-Type", ct)
		if code != http.StatusUnsupportedMediaType || str(errorOf(t, body).Code) != "unsupported_media_type" {
			t.Fatalf("Content-Type %q: %d %s", ct, code, body)
		}
	}
	if code, body := e.Post("/tokenize", `{"prompt":"Hi"}`, "Content-Type", "Application/JSON; charset=utf-8"); code != 200 {
		t.Fatalf("JSON with charset: %d %s", code, body)
	}
	if e.B.Decodes.Load() != 0 {
		t.Fatal("a refused request generated")
	}
}

// TestBearerCaseInsensitive: the auth scheme is case-insensitive (RFC 7235).
func TestBearerCaseInsensitive(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.APIKey = "sekrit" })
	for _, h := range []string{"bearer sekrit", "BEARER sekrit", "Bearer  sekrit"} {
		if code, _, body := e.Do("GET", "/v1/models", "", "Authorization", h); code != 200 {
			t.Errorf("%q: %d %s", h, code, body)
		}
	}
	if code, _, _ := e.Do("GET", "/v1/models", "", "Authorization", "Basic sekrit"); code != 401 {
		t.Errorf("Basic scheme: %d", code)
	}
}

// rawRequest writes req on a fresh connection to e and returns the response status (0 when the
// connection closed without one) within d.
func rawRequest(t *testing.T, e *servertest.Env, req string, d time.Duration) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(e.TS.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMalformedBodies: a bad chunk size or a body shorter than its Content-Length is the client's
// error: 400, not logged as a server error.
func TestMalformedBodies(t *testing.T) {
	e := servertest.New(t)
	head := "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
	for name, req := range map[string]string{
		"bad chunk size": head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
		"short body":     head + "Content-Length: 100\r\nConnection: close\r\n\r\n{\"prompt\":",
	} {
		if name == "short body" {
			// The client half-closes after the short body: the server sees EOF before Content-Length.
			c, err := net.Dial("tcp", strings.TrimPrefix(e.TS.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, req)
			c.(*net.TCPConn).CloseWrite()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			b, _ := io.ReadAll(resp.Body)
			c.Close()
			if resp.StatusCode != 400 || !strings.Contains(string(b), "invalid_body") {
				t.Fatalf("%s: %d %s", name, resp.StatusCode, b)
			}
			continue
		}
		if code, body := rawRequest(t, e, req, 10*time.Second); code != 400 || !strings.Contains(body, "invalid_body") {
			t.Fatalf("%s: %d %s", name, code, body)
		}
	}
	if logs := e.Logs.String(); strings.Contains(logs, "level=ERROR") {
		t.Fatalf("a client's malformed body logged as a server error:\n%s", logs)
	}
}

// TestBodyTimeoutAndSlots: a body that never finishes is cut off after the body timeout (408) and,
// while such bodies hold every read slot, more get 503 at once; /health stays fast throughout.
func TestBodyTimeoutAndSlots(t *testing.T) {
	// Long enough that both stuck bodies hold their slots well before it fires, even under -race on
	// a loaded 2-core machine; the probe below stops as soon as they do, and gives up a second
	// before they time out.
	const bodyTimeout = 3 * time.Second
	e := servertest.New(t, func(c *server.Config) {
		c.BodyTimeout = bodyTimeout
		c.BodyReads = 2
	})
	head := "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"pro\r\n"
	type result struct {
		code int
		took time.Duration
	}
	res := make(chan result, 2)
	for range 2 {
		go func() {
			for {
				start := time.Now()
				code, _ := rawRequest(t, e, head, bodyTimeout+10*time.Second) // never sends the last chunk
				if code == http.StatusServiceUnavailable {
					// It arrived while a probe below and the other stuck body held both slots: send
					// it again (under -race on 2 cores that collision was what failed this test).
					continue
				}
				res <- result{code, time.Since(start)}
				return
			}
		}()
	}
	code, body := 0, ""
	for deadline := time.Now().Add(bodyTimeout - time.Second); code != 503 && time.Now().Before(deadline); {
		code, body = e.Post("/v1/completions", `{"prompt":"Hi","max_tokens":1}`) // 200 until both are in
	}
	if code != 503 {
		t.Fatalf("a body while two are stuck: %d %s", code, body)
	}
	start := time.Now()
	if code, _, _ := e.Do("GET", "/health", ""); code != 200 || time.Since(start) > time.Second {
		t.Fatalf("/health: %d in %v", code, time.Since(start))
	}
	for range 2 {
		r := <-res
		if r.code != http.StatusRequestTimeout || r.took > bodyTimeout+6*time.Second {
			t.Fatalf("stuck body: %d after %v", r.code, r.took)
		}
	}
	e.Script("ok")
	if code, body := e.Post("/v1/completions", `{"prompt":"Hi","max_tokens":1}`); code != 200 {
		t.Fatalf("after the timeouts: %d %s", code, body)
	}
}

// TestInternalErrorHidden: a 500's body does not carry the internal error text.
func TestInternalErrorHidden(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.Model.Chat = panicChat{} })
	code, body := e.Post("/v1/chat/completions", chatHi)
	if code != 500 || strings.Contains(body, "boom") || errorOf(t, body).Message != "internal error" {
		t.Fatalf("%d %s", code, body)
	}
}

// TestRejectedBodyAnsweredAtOnce: a request turned away before its body is read — no read slot
// free, no API key, the wrong Content-Type — gets its answer at once even when its body never
// ends. net/http reads an unread body to its end before it answers on a connection it means to
// keep; with no read deadline set yet, a chunked body that never finishes held the goroutine and
// connection and the client never saw the answer.
func TestRejectedBodyAnsweredAtOnce(t *testing.T) {
	const bodyTimeout = 3 * time.Second
	open := func(ct, auth string) string { // a chunked POST whose last chunk never comes
		return "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: " + ct + "\r\n" + auth +
			"Transfer-Encoding: chunked\r\n\r\n5\r\n{\"pro\r\n"
	}
	e := servertest.New(t, func(c *server.Config) {
		c.BodyTimeout = bodyTimeout
		c.BodyReads = 1
	})
	held := make(chan int, 1)
	go func() {
		code, _ := rawRequest(t, e, open("application/json", ""), bodyTimeout+10*time.Second)
		held <- code
	}()
	code := 0
	for deadline := time.Now().Add(bodyTimeout - time.Second); code != 503 && time.Now().Before(deadline); {
		code, _ = e.Post("/v1/completions", `{"prompt":"Hi","max_tokens":1}`) // 200 until the stuck body holds the slot
	}
	if code != 503 {
		t.Fatalf("a complete body while the slot is held: %d", code)
	}
	for name, c := range map[string]struct {
		head string
		want int
	}{
		"no read slot":     {open("application/json", ""), http.StatusServiceUnavailable},
		"wrong media type": {open("text/plain", ""), http.StatusUnsupportedMediaType},
	} {
		start := time.Now()
		if got, body := rawRequest(t, e, c.head, time.Second); got != c.want {
			t.Fatalf("%s, body never finished: %d %q after %v, want %d at once", name, got, body, time.Since(start), c.want)
		}
	}
	if code := <-held; code != http.StatusRequestTimeout {
		t.Fatalf("the stuck body that held the slot: %d", code)
	}
	k := servertest.New(t, func(c *server.Config) { c.APIKey = "secret" })
	if got, body := rawRequest(t, k, open("application/json", ""), time.Second); got != http.StatusUnauthorized {
		t.Fatalf("no API key, body never finished: %d %q, want 401 at once", got, body)
	}
}
