package server

import (
	"net/http"
	"strings"
)

// Info is the body of GET /v1/lily/info: what this server runs, for the chat page's header and
// for scripts that want to know without parsing logs.
type Info struct {
	// Model is the served model id (the one /v1/models lists and requests may name).
	Model string `json:"model"`
	// Backend is "ref" or "fast"; Device where it computes: "cpu", "metal" or "metal-emu".
	Backend string `json:"backend"`
	Device  string `json:"device"`
	// ContextSize is the context window a request's prompt plus max_tokens must fit (--ctx-size,
	// capped to the model's maximum); MaxContext is the backend's own maximum.
	ContextSize int `json:"context_size"`
	MaxContext  int `json:"max_context"`
}

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, Info{
		Model: s.m.Name, Backend: s.m.BackendName, Device: s.m.Device,
		ContextSize: s.ctx, MaxContext: s.m.Backend.MaxContext(),
	})
	return nil
}

// isPagePath says whether path belongs to the chat page: / itself and its files under /ui/.
func isPagePath(path string) bool {
	return path == "/" || strings.HasPrefix(path, "/ui/")
}

// pageRequest says whether r reads the chat page (GET or HEAD of a page path, with a page
// configured): those need no API key, since the page asks for the key itself.
func (s *Server) pageRequest(r *http.Request) bool {
	return s.cfg.Page != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		isPagePath(r.URL.Path) && s.routes[r.URL.Path] == nil
}

// servePage hands GET and HEAD of a page path to the page handler; other methods get 405.
func (s *Server) servePage(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &MethodError{Method: r.Method, Allow: []string{http.MethodGet, http.MethodHead}}
	}
	s.cfg.Page.ServeHTTP(w, r)
	return nil
}
