package webui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestBudget holds the page, all its files together, to Budget bytes uncompressed.
func TestBudget(t *testing.T) {
	total := 0
	for _, f := range Files() {
		total += len(f.Data)
	}
	if total == 0 || total > Budget {
		t.Fatalf("the page weighs %d bytes; the budget is %d", total, Budget)
	}
	t.Logf("page weight %d bytes of %d", total, Budget)
}

// TestNoExternalReferences: every URL the page's files name is its own (/ui/…, /v1/…) or data:.
func TestNoExternalReferences(t *testing.T) {
	url := regexp.MustCompile(`(?i)(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for _, f := range Files() {
		if m := url.FindAllString(string(f.Data), -1); len(m) > 0 {
			t.Errorf("%s names another origin: %v", f.Name, m)
		}
	}
}

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	get := func(path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	index, body := get("/")
	if index.StatusCode != 200 || !strings.HasPrefix(index.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, `src="/ui/app.js"`) {
		t.Fatalf("GET /: %d %s\n%.200s", index.StatusCode, index.Header.Get("Content-Type"), body)
	}
	if csp := index.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	for _, f := range Files() {
		if f.Name == "index.html" {
			continue
		}
		resp, b := get("/ui/" + f.Name)
		if resp.StatusCode != 200 || b != string(f.Data) || resp.Header.Get("Content-Type") != f.Type {
			t.Errorf("/ui/%s: %d %s, %d bytes", f.Name, resp.StatusCode, resp.Header.Get("Content-Type"), len(b))
		}
	}
	if again, _ := get("/", "If-None-Match", index.Header.Get("ETag")); again.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation: %d, want 304", again.StatusCode)
	}
	for _, p := range []string{"/ui/", "/ui/nope.js", "/index.html", "/ui/../webui.go"} {
		if resp, _ := get(p); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, resp.StatusCode)
		}
	}
}
