package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/lily-engine/lily/internal/server"
	"github.com/lily-engine/lily/internal/server/servertest"
)

// pageStub stands in for internal/webui: it answers every request with its path.
func pageStub(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("page " + r.URL.Path))
}

func TestInfo(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) {
		c.CtxSize = 300
		c.Model.BackendName, c.Model.Device = "fast", "cpu"
	})
	code, _, body := e.Do("GET", "/v1/lily/info", "")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var got server.Info
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := server.Info{Model: servertest.ModelName, Backend: "fast", Device: "cpu", ContextSize: 300, MaxContext: 512}
	if got != want {
		t.Fatalf("info %+v, want %+v", got, want)
	}
	if code, _ := e.Post("/v1/lily/info", "{}", "Content-Type", "application/json"); code != http.StatusMethodNotAllowed {
		t.Fatalf("POST info: %d", code)
	}
}

func TestPageRoutes(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.APIKey = "k1"; c.Page = http.HandlerFunc(pageStub) })
	for _, tc := range []struct {
		method, path string
		hdr          []string
		status       int
		body         string
	}{
		{"GET", "/", nil, 200, "page /"}, // the page itself needs no key: it asks for one
		{"HEAD", "/", nil, 200, ""},
		{"GET", "/ui/app.js", nil, 200, "page /ui/app.js"},
		{"POST", "/", nil, 401, ""}, // only reading the page is exempt from the key
		{"POST", "/", []string{"Authorization", "Bearer k1"}, 405, ""},
		{"GET", "/v1/lily/info", nil, 401, ""},
		{"GET", "/v1/lily/info", []string{"Authorization", "Bearer k1"}, 200, ""},
		{"GET", "/uix", []string{"Authorization", "Bearer k1"}, 404, ""},
	} {
		code, _, body := e.Do(tc.method, tc.path, "", tc.hdr...)
		if code != tc.status || (tc.body != "" && body != tc.body) {
			t.Errorf("%s %s %v: %d %q, want %d %q", tc.method, tc.path, tc.hdr, code, body, tc.status, tc.body)
		}
	}
	req, _ := http.NewRequest("GET", e.TS.URL+"/", nil)
	req.Host = "evil.example" // the page keeps the Host allowlist (DNS rebinding)
	resp, err := e.TS.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET / with Host evil.example: %d, want 403", resp.StatusCode)
	}
	none := servertest.New(t)
	if code, _, _ := none.Do("GET", "/", ""); code != http.StatusNotFound {
		t.Errorf("GET / without a page: %d, want 404", code)
	}
}
