package server

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
)

// modelPrefix is the path of GET /v1/models/{id}.
const modelPrefix = "/v1/models/"

// handleModel serves GET /v1/models/{id}: the served model, or 404 for any other id.
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) error {
	id := strings.TrimPrefix(r.URL.Path, modelPrefix)
	if id != s.m.Name {
		return &ModelNotFoundError{Model: id}
	}
	writeJSON(w, http.StatusOK, s.modelInfo())
	return nil
}

func (s *Server) modelInfo() ModelInfo {
	return ModelInfo{ID: s.m.Name, Object: "model", Created: s.cfg.Now().Unix(), OwnedBy: "lily", MaxModelLen: s.ctx}
}

// VersionInfo answers GET /version.
type VersionInfo struct {
	Version   string `json:"version"` // the module version, or "(devel)"
	Revision  string `json:"revision,omitempty"`
	GoVersion string `json:"go_version"`
	Backend   string `json:"backend"`
	Model     string `json:"model"`
}

// handleVersion serves GET /version from the binary's build information.
func (s *Server) handleVersion(w http.ResponseWriter, r *http.Request) error {
	v := VersionInfo{Version: "(devel)", GoVersion: runtime.Version(), Backend: s.m.Backend.Name(), Model: s.m.Name}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, kv := range bi.Settings {
			if kv.Key == "vcs.revision" {
				v.Revision = kv.Value
			}
		}
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
