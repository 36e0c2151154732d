package webui_test

// The browser harness: Debian's chromium driven by chromedp, a real `lily serve` built from this
// tree, the network log of every request the page makes, and screenshots under a temp dir.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// chromiumPath finds the browser, or decides the test's fate without one: LILY_BROWSER_TESTS=0
// skips the browser tests; LILY_BROWSER_TESTS=1 or a CI environment (CI set, as .ci/run does)
// requires them, so a missing chromium fails; otherwise they run when chromium is installed.
func chromiumPath(t *testing.T) string {
	t.Helper()
	mode := os.Getenv("LILY_BROWSER_TESTS")
	if mode == "0" {
		t.Skip("LILY_BROWSER_TESTS=0")
	}
	ci := os.Getenv("CI")
	required := mode == "1" || (ci != "" && ci != "0" && ci != "false")
	if !required && testing.Short() {
		t.Skip("browser tests take tens of seconds; -short skips them outside CI")
	}
	candidates := []string{os.Getenv("LILY_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	if required {
		t.Fatal("chromium not found (apt-get install -y chromium, or set LILY_CHROMIUM); " +
			"the browser tests are required here (LILY_BROWSER_TESTS=1 or CI)")
	}
	t.Skip("chromium not found: apt-get install -y chromium to run the browser tests")
	return ""
}

// request is one request the page made, from the browser's network log.
type request struct {
	URL, Method, Body string
	Headers           map[string]any
}

// browser is one headless chromium with a tab whose requests are all recorded.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string

	mu   sync.Mutex
	reqs []request
}

// newBrowser starts chromium (with extra allocator options, if any) and opens a tab.
func newBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	exe := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	shots := os.Getenv("LILY_SCREENSHOTS")
	if shots == "" {
		var err error
		if shots, err = os.MkdirTemp("", "lily-webui-"); err != nil {
			t.Fatal(err)
		}
	}
	b := &browser{t: t, ctx: ctx, shots: shots}
	b.record(ctx)
	return b
}

// tab opens a new tab in b's browser for test t, with its own request log (and, for a page
// served from another port, its own origin's storage).
func (b *browser) tab(t *testing.T) *browser {
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	nb := &browser{t: t, ctx: ctx, shots: b.shots}
	nb.record(ctx)
	return nb
}

// record starts collecting the tab's requests (with POST bodies) from its network log.
func (b *browser) record(ctx context.Context) {
	events := chromedp.Events(ctx, network.RequestWillBeSent)
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{MaxPostDataSize: new(int64(1 << 20))}); err != nil {
		b.t.Fatalf("network log: %v", err)
	}
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			r := request{URL: ev.Request.URL, Method: ev.Request.Method, Headers: map[string]any(ev.Request.Headers)}
			for _, e := range ev.Request.PostDataEntries {
				r.Body += string(e.Bytes)
			}
			b.mu.Lock()
			b.reqs = append(b.reqs, r)
			b.mu.Unlock()
		}
	}()
}

// requests returns what the page has requested so far.
func (b *browser) requests() []request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]request(nil), b.reqs...)
}

// lastChat returns the body of the page's most recent chat request, decoded.
func (b *browser) lastChat() map[string]any {
	b.t.Helper()
	reqs := b.requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.HasSuffix(reqs[i].URL, "/v1/chat/completions") && reqs[i].Method == "POST" {
			var body map[string]any
			if err := json.Unmarshal([]byte(reqs[i].Body), &body); err != nil {
				b.t.Fatalf("chat request body %q: %v", reqs[i].Body, err)
			}
			return body
		}
	}
	b.t.Fatal("the page sent no chat request")
	return nil
}

// do runs actions, failing the test (with a screenshot) on error.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.fail("%v", err)
	}
}

// fail saves a screenshot of the page and fails the test.
func (b *browser) fail(format string, args ...any) {
	b.t.Helper()
	b.screenshot("failure-" + regexp.MustCompile(`\W+`).ReplaceAllString(b.t.Name(), "_"))
	b.t.Fatalf(format, args...)
}

// eval evaluates a JavaScript expression in the page (awaiting it when it is a promise).
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail("evaluating %s: %v", expr, err)
	}
	return v
}

// wait polls a JavaScript predicate until it holds, for at most d.
func (b *browser) wait(d time.Duration, expr string) {
	b.t.Helper()
	_, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(d),
		chromedp.WithPollingInterval(10*time.Millisecond)))
	if err != nil {
		b.fail("waiting %v for %s: %v", d, expr, err)
	}
}

// screenshot saves the viewport as name.png under the screenshot dir and prints its path.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	buf, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	b.t.Logf("screenshot: %s", p)
}

// buildLily builds cmd/lily from this tree (with the caller's GOEXPERIMENT) into a temp dir.
func buildLily(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lily")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goTool, "build", "-o", bin, "./cmd/lily")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/lily: %v\n%s", err, out)
	}
	return bin
}

// lilyServer is a running `lily serve` whose stderr (the request log) is kept.
type lilyServer struct {
	URL string
	mu  sync.Mutex
	log strings.Builder
}

// Log returns the server's stderr so far.
func (s *lilyServer) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// startLily runs `bin serve --port 0 args…` until the test ends and returns once it listens.
func startLily(t *testing.T, bin string, args ...string) *lilyServer {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--host", "127.0.0.1", "--port", "0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	s := &lilyServer{}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		url := regexp.MustCompile(`msg=serving url=(http://\S+)`)
		for sc.Scan() {
			s.mu.Lock()
			s.log.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := url.FindStringSubmatch(sc.Text()); m != nil {
				ready <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		close(ready)
	}()
	select {
	case u, ok := <-ready:
		if !ok {
			t.Fatalf("lily serve exited:\n%s", s.Log())
		}
		s.URL = u
	case <-time.After(60 * time.Second):
		t.Fatalf("lily serve did not start in 60 s:\n%s", s.Log())
	}
	return s
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// sameOrigin reports whether every request the page made went to origin (or stayed in the
// browser: data: and blob: URLs).
func sameOrigin(reqs []request, origin string) error {
	for _, r := range reqs {
		if strings.HasPrefix(r.URL, origin+"/") || strings.HasPrefix(r.URL, "data:") || strings.HasPrefix(r.URL, "blob:") {
			continue
		}
		return fmt.Errorf("the page requested %s %s (not %s)", r.Method, r.URL, origin)
	}
	return nil
}
