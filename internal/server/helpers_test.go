package server_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lily-engine/lily/internal/engine/enginetest"
	"github.com/lily-engine/lily/internal/server"
)

const modelName = "qwen-test"

// env is a real handler on an httptest server over the fake backend, tokenizer and chat format.
type env struct {
	t    *testing.T
	srv  *server.Server
	ts   *httptest.Server
	b    *enginetest.Backend
	tok  *fakeTok
	logs *syncBuffer
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fixedNow is the clock of every test server.
func fixedNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func newEnv(t *testing.T, configure ...func(*server.Config)) *env {
	t.Helper()
	tok := newFakeTok()
	b := &enginetest.Backend{Vocab: tok.VocabSize(), Context: 512, MinID: firstPlain + 4, End: idIMEnd}
	logs := &syncBuffer{}
	var n atomic.Int64
	cfg := server.Config{
		Model:     server.Model{Name: modelName, Backend: b, Tok: tok, NewDecoder: tok.newDecoder, Chat: fakeChat{}},
		Loopback:  true,
		KeepAlive: -1,
		Logger:    slog.New(slog.NewTextHandler(logs, nil)),
		Now:       fixedNow,
		RandomID: func(k int) string {
			s := fmt.Sprintf("%0*d", k, n.Add(1))
			return s[len(s)-k:]
		},
	}
	for _, c := range configure {
		c(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		_ = srv.Close()
	})
	return &env{t: t, srv: srv, ts: ts, b: b, tok: tok, logs: logs}
}

// script makes the fake model answer text and then <|im_end|> to every prompt.
func (e *env) script(text string) { e.b.Script = e.tok.Encode(text) }

// do sends a request and returns the status, headers and body.
func (e *env) do(method, path, body string, hdr ...string) (int, http.Header, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func (e *env) post(path, body string, hdr ...string) (int, string) {
	e.t.Helper()
	code, _, b := e.do(http.MethodPost, path, body, hdr...)
	return code, b
}

// sseEvents splits an SSE body into its data payloads.
func sseEvents(body string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
