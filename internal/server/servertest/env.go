package servertest

import (
	"bufio"
	"bytes"
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

const ModelName = "qwen-test"

// Env is a real handler on an httptest server over the fake backend, tokenizer and chat format.
type Env struct {
	T    *testing.T
	Srv  *server.Server
	TS   *httptest.Server
	B    *enginetest.Backend
	Tok  *Tokenizer
	Logs *SyncBuffer
}

// SyncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// FixedNow is the clock of every test server.
func FixedNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

// New starts the real handler on an httptest server; configure adjusts the Config first.
func New(t *testing.T, configure ...func(*server.Config)) *Env {
	t.Helper()
	tok := NewTokenizer()
	b := &enginetest.Backend{Vocab: tok.VocabSize(), Context: 512, MinID: FirstPlain + 4, End: IDIMEnd}
	logs := &SyncBuffer{}
	var n atomic.Int64
	cfg := server.Config{
		Model:     server.Model{Name: ModelName, Backend: b, Tok: tok, NewDecoder: tok.NewDecoder, Chat: Chat{}},
		Loopback:  true,
		KeepAlive: -1,
		Logger:    slog.New(slog.NewTextHandler(logs, nil)),
		Now:       FixedNow,
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
	return &Env{T: t, Srv: srv, TS: ts, B: b, Tok: tok, Logs: logs}
}

// Script makes the fake model answer text and then <|im_end|> to every prompt.
func (e *Env) Script(text string) { e.B.Script = e.Tok.Encode(text) }

// Do sends a request and returns the status, headers and body.
func (e *Env) Do(method, path, body string, hdr ...string) (int, http.Header, string) {
	e.T.Helper()
	req, err := http.NewRequest(method, e.TS.URL+path, strings.NewReader(body))
	if err != nil {
		e.T.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json") // as every API client sends; hdr may override
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.TS.Client().Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// Post sends a POST and returns the status and body.
func (e *Env) Post(path, body string, hdr ...string) (int, string) {
	e.T.Helper()
	code, _, b := e.Do(http.MethodPost, path, body, hdr...)
	return code, b
}

// SSEEvents splits an SSE body into its data payloads.
func SSEEvents(body string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}
