package diff_test

import (
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/diff"
	"github.com/lily-engine/lily/internal/trace"
)

// route records one token's router decision in layer 0 at position 0.
func route(logits []float32, ids []int) *diff.Trace {
	r := trace.NewRecorder()
	w := make([]float32, len(ids))
	for i := range w {
		w[i] = 1 / float32(len(ids))
	}
	r.Route(0, 0, 1, logits, ids, w)
	return &diff.Trace{Backend: "x", Rec: r}
}

// TestRouterFlips: a different expert set is a flip; it is a near tie when the logits' error could
// have swapped the k-th and (k+1)-th experts (2·max|Δ| ≥ margin), and a bug otherwise. A matching
// set with equal weights passes.
func TestRouterFlips(t *testing.T) {
	want := route([]float32{3, 2, 1.0000, 0.9999, 0}, []int{0, 1, 2})
	for _, c := range []struct {
		name    string
		got     *diff.Trace
		flip    bool
		nearTie bool
	}{
		{"same", route([]float32{3, 2, 1.0000, 0.9999, 0}, []int{0, 1, 2}), false, false},
		{"near tie", route([]float32{3, 2, 0.99990, 1.0000, 0}, []int{0, 1, 3}), true, true},
		{"bug", route([]float32{3, 2, 1.0000, 0.9999, 0}, []int{0, 1, 4}), true, false},
	} {
		rep := diff.Compare(c.got, want, 1)
		if c.flip != (len(rep.Flips) == 1) || rep.Pass == c.flip {
			t.Fatalf("%s: flips %+v, pass %v", c.name, rep.Flips, rep.Pass)
		}
		if !c.flip {
			continue
		}
		f := rep.Flips[0]
		if f.NearTie != c.nearTie || f.Margin < 0.99e-4 || f.Margin > 1.01e-4 {
			t.Errorf("%s: %+v, want near tie %v and margin 1e-4", c.name, f, c.nearTie)
		}
		if rep.First == nil || rep.First.Point != "L0.router" || !strings.Contains(rep.First.Note, "margin") {
			t.Errorf("%s: first divergence %+v", c.name, rep.First)
		}
	}
}

// TestMissingPointFails: a point only one backend reports fails the comparison (a backend that lost
// a hook must not pass by comparing less).
func TestMissingPointFails(t *testing.T) {
	a, b := trace.NewRecorder(), trace.NewRecorder()
	row := []float32{1, 2}
	a.Rows(trace.Model(trace.Embed), 0, 1, row)
	b.Rows(trace.Model(trace.Embed), 0, 1, row)
	b.Rows(trace.At(0, trace.InputNorm), 0, 1, row)
	rep := diff.Compare(&diff.Trace{Backend: "got", Rec: a}, &diff.Trace{Backend: "ref", Rec: b}, 1)
	if rep.Pass || len(rep.Missing) != 1 || rep.Missing[0] != "L0.input_norm" {
		t.Errorf("pass %v, missing %v", rep.Pass, rep.Missing)
	}
}
