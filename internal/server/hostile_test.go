package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lily-engine/lily/internal/server"
	"github.com/lily-engine/lily/internal/server/servertest"
)

// rssBytes reads the resident set size from /proc/self/status (0 when unavailable).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// slowReader dribbles b in small pieces with a pause between them (a slow client that finishes).
type slowReader struct {
	b     []byte
	pause time.Duration
}

func (s *slowReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	time.Sleep(s.pause)
	n := copy(p[:min(len(p), 64)], s.b)
	s.b = s.b[n:]
	return n, nil
}

// TestHostileLoad sends 50 concurrent mixed requests over loopback, including slow, oversized,
// deeply nested, cross-origin and context-overflowing ones: every answer must be 200, 400, 403,
// 413 or 503; /health must answer fast throughout; and the process's resident memory must come
// back near where it started. Bounded: each request has a deadline and the whole run one too.
func TestHostileLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test: skipped in -short mode")
	}
	e := servertest.New(t, func(c *server.Config) {
		c.CtxSize = 256
		c.QueueSize = 4
		c.MaxBody = 256 << 10
		c.BodyTimeout = 10 * time.Second
	})
	e.Script("fine, thanks")
	e.B.DecodeDelay = time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 60 * time.Second}

	chat := `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8}`
	longWord := strings.Repeat("x", 200<<10) // one pre-token, under the body limit, over the context
	word := longWord[:16<<10]                // tokenized for real: the fake tokenizer is slow per byte
	deep := strings.Repeat("[", 9990) + strings.Repeat("]", 9990)
	type kind struct {
		name, path string
		body       func() io.Reader
		hdr        []string
		want       []int
	}
	jsonHdr := []string{"Content-Type", "application/json"}
	kinds := []kind{
		{"chat", "/v1/chat/completions", func() io.Reader { return strings.NewReader(chat) }, jsonHdr, []int{200, 503}},
		{"stream", "/v1/completions", func() io.Reader { return strings.NewReader(`{"prompt":"Hi","max_tokens":8,"stream":true}`) }, jsonHdr, []int{200, 503}},
		{"slow body", "/v1/chat/completions", func() io.Reader { return &slowReader{[]byte(chat), 10 * time.Millisecond} }, jsonHdr, []int{200, 503}},
		{"oversized", "/v1/completions", func() io.Reader { return bytes.NewReader(make([]byte, 512<<10)) }, jsonHdr, []int{413, 503}},
		{"long word", "/v1/completions", func() io.Reader { return strings.NewReader(`{"prompt":"` + longWord + `"}`) }, jsonHdr, []int{400, 503}},
		{"long word tokenize", "/tokenize", func() io.Reader { return strings.NewReader(`{"prompt":"` + word + `"}`) }, jsonHdr, []int{200, 503}},
		{"deep", "/v1/completions", func() io.Reader { return strings.NewReader(`{"prompt":` + deep + `}`) }, jsonHdr, []int{400, 503}},
		{"huge max_tokens", "/v1/chat/completions", func() io.Reader {
			return strings.NewReader(`{"messages":[{"role":"user","content":"Hi"}],"max_tokens":9223372036854775807}`)
		}, jsonHdr, []int{400, 503}},
		{"cross-origin", "/v1/chat/completions", func() io.Reader { return strings.NewReader(chat) },
			[]string{"Content-Type", "text/plain", "Origin", "http://evil.example"}, []int{403}},
		{"bad json", "/v1/chat/completions", func() io.Reader { return strings.NewReader(`{"messages":`) }, jsonHdr, []int{400, 503}},
	}

	// A warm-up request, then the baseline: the server, its goroutines and the client's pools exist.
	if code, body := e.Post("/v1/chat/completions", chat); code != 200 {
		t.Fatalf("warm-up: %d %s", code, body)
	}
	runtime.GC()
	debug.FreeOSMemory()
	rss0 := rssBytes()

	// /health unloaded, to know how noisy the machine is.
	idle := make([]time.Duration, 25)
	for i := range idle {
		start := time.Now()
		if code, _, _ := e.Do("GET", "/health", ""); code != 200 {
			t.Fatalf("/health: %d", code)
		}
		idle[i] = time.Since(start)
		time.Sleep(5 * time.Millisecond)
	}
	slices.Sort(idle)
	// 50 ms on a quiet machine (idle p90 under 5 ms); proportionally more on a machine that is
	// already slow to answer an idle server (other processes on its cores), so the test measures
	// this server's work, not its neighbours'.
	limit := 50 * time.Millisecond
	if p90 := idle[len(idle)*9/10]; p90 > 5*time.Millisecond {
		limit = time.Duration(float64(limit) * float64(p90) / float64(5*time.Millisecond))
	}
	if raceEnabled {
		limit *= 10 // the race detector's slowdown
	}

	// /health, polled throughout.
	var health []time.Duration
	stop := make(chan struct{})
	var hwg sync.WaitGroup
	hwg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			start := time.Now()
			req, _ := http.NewRequestWithContext(ctx, "GET", e.TS.URL+"/health", nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("/health: %v", err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			health = append(health, time.Since(start))
		}
	})

	const n = 50
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		k := kinds[i%len(kinds)]
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "POST", e.TS.URL+k.path, k.body())
			for j := 0; j+1 < len(k.hdr); j += 2 {
				req.Header.Set(k.hdr[j], k.hdr[j+1])
			}
			resp, err := client.Do(req)
			if err != nil {
				got[i] = fmt.Sprintf("%s: %v", k.name, err)
				t.Errorf("%s: %v", k.name, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			got[i] = fmt.Sprintf("%s: %d", k.name, resp.StatusCode)
			if !slices.Contains(k.want, resp.StatusCode) {
				t.Errorf("%s: status %d, want one of %v", k.name, resp.StatusCode, k.want)
			}
		})
	}
	wg.Wait()
	close(stop)
	hwg.Wait()
	t.Logf("answers: %s", strings.Join(got, ", "))

	// /health: the typical sample must be under the limit; on a shared 2-core machine single
	// samples can wait for a core the OS gave to another process, so the worst may reach twenty
	// times it (a request stuck behind the work, the failure this guards against, waits seconds).
	slices.Sort(health)
	if len(health) == 0 {
		t.Fatal("no /health sample")
	}
	median, worst := health[len(health)/2], health[len(health)-1]
	t.Logf("/health: idle p90 %v, limit %v; under load %d samples, median %v, max %v",
		idle[len(idle)*9/10], limit, len(health), median, worst)
	if median > limit || worst > 20*limit {
		t.Errorf("/health slow under load: median %v, max %v (limit %v)", median, worst, limit)
	}

	if code, body := e.Post("/v1/chat/completions", chat); code != 200 {
		t.Fatalf("after the load: %d %s", code, body)
	}
	if rss0 == 0 || raceEnabled {
		t.Log("resident memory not checked (no /proc/self/status, or the race detector's shadow memory, which it keeps)")
		return
	}
	client.CloseIdleConnections()
	runtime.GC()
	debug.FreeOSMemory()
	rss1 := rssBytes()
	t.Logf("RSS %d MB before, %d MB after", rss0>>20, rss1>>20)
	if rss1-rss0 > 50<<20 {
		t.Errorf("resident memory grew by %d MB and stayed", (rss1-rss0)>>20)
	}
}
