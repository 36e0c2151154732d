package engine

import (
	"strings"
	"testing"
)

func TestStopMatcher(t *testing.T) {
	tests := []struct {
		name    string
		stops   []string
		chunks  []string
		want    []string // released per chunk
		stopped int      // index of the chunk that stops, -1 none
		tail    string
	}{
		{"no stops passes through", nil, []string{"ab", "c"}, []string{"ab", "c"}, -1, ""},
		{"whole stop in one chunk", []string{"END"}, []string{"abEND", "x"}, []string{"ab"}, 0, ""},
		{"stop split across chunks", []string{"END"}, []string{"abE", "N", "Dzz"}, []string{"ab", "", ""}, 2, ""},
		{"false prefix released", []string{"END"}, []string{"abE", "x"}, []string{"ab", "Ex"}, -1, ""},
		{"held at the end is flushed", []string{"END"}, []string{"aEN"}, []string{"a"}, -1, "EN"},
		{"earliest of several", []string{"yz", "bc"}, []string{"abcxyz"}, []string{"a"}, 0, ""},
		{"longest possible prefix held", []string{"aab"}, []string{"xaa", "ab"}, []string{"x", "a"}, 1, ""},
		{"multibyte", []string{"é!"}, []string{"caf\u00e9", "!"}, []string{"caf", ""}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &stopMatcher{stops: tt.stops}
			stopped := -1
			for i, c := range tt.chunks {
				out, hit := m.add(c)
				if out != tt.want[i] {
					t.Fatalf("chunk %d %q: released %q, want %q", i, c, out, tt.want[i])
				}
				if hit {
					stopped = i
					break
				}
			}
			if stopped != tt.stopped {
				t.Fatalf("stopped at %d, want %d", stopped, tt.stopped)
			}
			if tail := m.flush(); tail != tt.tail {
				t.Fatalf("tail %q, want %q", tail, tt.tail)
			}
		})
	}
}

// Splitting a text at every point never releases a stop string, and releases exactly the text before it.
func TestStopMatcherEverySplit(t *testing.T) {
	const text = "one stop two STOP three"
	for i := 0; i <= len(text); i++ {
		for j := i; j <= len(text); j++ {
			m := &stopMatcher{stops: []string{"STOP", "xyz"}}
			var got strings.Builder
			hit := false
			for _, c := range []string{text[:i], text[i:j], text[j:]} {
				out, h := m.add(c)
				got.WriteString(out)
				if h {
					hit = true
					break
				}
			}
			if !hit || got.String() != "one stop two " {
				t.Fatalf("split %d,%d: got %q hit=%v", i, j, got.String(), hit)
			}
		}
	}
}
