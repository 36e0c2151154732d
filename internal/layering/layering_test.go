package layering

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/lily-engine/lily/"

// family is the engine a package belongs to ("ref", "fast" or "metal", with their subpackages), or "".
func family(pkg string) string {
	for _, f := range []string{"ref", "fast", "metal"} {
		if pkg == f || strings.HasPrefix(pkg, f+"/") {
			return f
		}
	}
	return ""
}

// violations lists the edges of graph (package → its non-test imports, module-relative paths) that
// break the layering:
//   - an engine package (ref, fast, metal and their subpackages) imports another engine's package;
//   - a package outside cmd imports an engine (only the commands choose a backend);
//   - internal/engine imports internal/server (the server sees the engines only through the
//     engine contract, never the other way);
//   - anything imports cmd.
//
// oraclePkg is lily doctor's kernel table, the one metal package that imports ref: it compares
// the kernels with the oracle, and only cmd imports it (the engine cannot: it imports the engine).
const oraclePkg = "metal/kernelcheck"

func violations(graph map[string][]string) []string {
	var bad []string
	for pkg, imps := range graph {
		for _, imp := range imps {
			from, to := family(pkg), family(imp)
			var why string
			switch {
			case strings.HasPrefix(imp, "cmd/"):
				why = "nothing imports a command"
			case from != "" && to != "" && from != to && !(pkg == oraclePkg && imp == "ref"):
				why = "an engine imports another engine (or ref)"
			case to == "metal" && imp == oraclePkg && !strings.HasPrefix(pkg, "cmd/"):
				why = "only cmd runs the kernel checks against ref"
			case from == "" && to != "" && !strings.HasPrefix(pkg, "cmd/"):
				why = "only cmd chooses a backend"
			case strings.HasPrefix(pkg, "internal/engine") && strings.HasPrefix(imp, "internal/server"):
				why = "the engine contract does not know the server"
			}
			if why != "" {
				bad = append(bad, fmt.Sprintf("%s → %s: %s", pkg, imp, why))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// required lists the edges the layering is built on: cmd → server → engine, and cmd → each engine
// (cmd alone chooses the backend).
func required() [][2]string {
	return [][2]string{
		{"cmd/lily", "internal/server"}, {"internal/server", "internal/engine"},
		{"cmd/lily", "ref"}, {"cmd/lily", "fast"}, {"cmd/lily", "metal"},
	}
}

// missing lists the required edges that graph lacks.
func missing(graph map[string][]string) []string {
	var out []string
	for _, e := range required() {
		if !slices.Contains(graph[e[0]], e[1]) {
			out = append(out, fmt.Sprintf("%s → %s: a required edge is missing", e[0], e[1]))
		}
	}
	return out
}

// TestViolationsCatchesBadEdges feeds the checker a graph with one edge of each forbidden kind
// and one allowed graph.
func TestViolationsCatchesBadEdges(t *testing.T) {
	ok := map[string][]string{
		"cmd/lily":        {"internal/server", "internal/engine", "ref", "fast", "metal"},
		"internal/server": {"internal/engine", "internal/chat"},
		"fast":            {"fast/cpu", "internal/engine", "internal/checkpoint"},
		"metal":           {"metal/emu", "internal/rope"},
		"ref":             {"internal/rope", "internal/checkpoint"},
	}
	if v := append(violations(ok), missing(ok)...); len(v) != 0 {
		t.Fatalf("allowed graph reported: %v", v)
	}
	for _, e := range required() {
		g := map[string][]string{}
		for k, v := range ok {
			g[k] = slices.DeleteFunc(slices.Clone(v), func(s string) bool { return k == e[0] && s == e[1] })
		}
		if m := missing(g); len(m) != 1 {
			t.Errorf("without %s → %s: got %v, want it reported missing", e[0], e[1], m)
		}
	}
	for _, edge := range [][2]string{
		{"metal", "ref"}, {"metal", "fast/cpu"}, {"fast", "metal/emu"}, {"ref", "fast"}, {"fast/cpu", "ref"},
		{"internal/server", "fast"}, {"internal/engine", "internal/server"}, {"internal/server", "cmd/lily"},
		{"ref", "metal"}, {"metal", "fast"}, {"internal/server", "ref"}, {"internal/server", "metal"},
		{"metal/device", "ref"}, {"metal/perfmodel", "metal/kernelcheck"}, {"metal/kernelcheck", "fast"},
	} {
		if v := violations(map[string][]string{edge[0]: {edge[1]}}); len(v) != 1 {
			t.Errorf("%s → %s: got %v, want one violation", edge[0], edge[1], v)
		}
	}
}

// TestImportGraph reads the module's import graph from `go list` (non-test imports) and checks it.
func TestImportGraph(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH, so the import graph cannot be listed")
	}
	cmd := exec.Command(goBin, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	graph := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		pkg := strings.TrimPrefix(f[0], module)
		graph[pkg] = nil
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				graph[pkg] = append(graph[pkg], strings.TrimPrefix(imp, module))
			}
		}
	}
	for _, must := range []string{"cmd/lily", "internal/server", "internal/engine", "ref", "fast", "metal"} {
		if _, ok := graph[must]; !ok {
			t.Fatalf("go list did not list %s (got %d packages)", must, len(graph))
		}
	}
	for _, v := range append(violations(graph), missing(graph)...) {
		t.Error(v)
	}
}
