package grammar

import (
	"strconv"
	"strings"
)

// maxDepth bounds the nesting of a match (frames on one stack), so that a sampled document cannot
// nest without end and the matcher's work per byte stays bounded.
const maxDepth = 64

// frame is a node and where the match is inside it. a, b and c are per-kind counters.
type frame struct {
	n       *Node
	st      int32
	a, b, c int32
}

// stack is a persistent stack of frames: stepping shares everything under the top.
type stack struct {
	f     frame
	up    *stack
	depth int32
}

func push(up *stack, f frame) *stack {
	d := int32(1)
	if up != nil {
		d = up.depth + 1
	}
	return &stack{f: f, up: up, depth: d}
}

// Matcher is where a text is in a grammar: the stacks of every way the text so far can continue
// (a nil stack: the text is complete). It is immutable; Feed returns a new one.
type Matcher struct {
	threads []*stack
}

// Start returns the matcher of the empty text.
func (g *Grammar) Start() *Matcher {
	return &Matcher{threads: dedup(expand(push(nil, frame{n: g.root}), nil))}
}

// Dead reports whether no continuation is left: the text is not a prefix of a sentence.
func (m *Matcher) Dead() bool { return m == nil || len(m.threads) == 0 }

// Complete reports whether the text so far is a sentence.
func (m *Matcher) Complete() bool {
	if m == nil {
		return false
	}
	for _, t := range m.threads {
		if t == nil {
			return true
		}
	}
	return false
}

// Final reports whether the text is a sentence that no byte can extend.
func (m *Matcher) Final() bool { return m.Complete() && len(m.threads) == 1 }

// Feed returns the matcher after the bytes b; Dead when they leave the language.
func (m *Matcher) Feed(b []byte) *Matcher {
	for _, c := range b {
		if m = m.feedByte(c); m.Dead() {
			return m
		}
	}
	return m
}

func (m *Matcher) feedByte(c byte) *Matcher {
	var out []*stack
	for _, t := range m.threads {
		if t == nil {
			continue
		}
		if next, ok := consume(t, c); ok {
			out = expand(next, out)
		}
	}
	return &Matcher{threads: dedup(out)}
}

// Remaining is the fewest bytes that complete the text (0 when complete; a large number when dead).
func (m *Matcher) Remaining() int {
	best := inf
	for _, t := range m.threads {
		best = min(best, remaining(t))
	}
	return best
}

// key identifies the matcher's state, for caches: equal keys, equal futures.
func (m *Matcher) key() string {
	var sb strings.Builder
	for _, t := range m.threads {
		writeKey(&sb, t)
		sb.WriteByte('|')
	}
	return sb.String()
}

func writeKey(sb *strings.Builder, t *stack) {
	for ; t != nil; t = t.up {
		f := t.f
		sb.WriteString(strconv.Itoa(int(f.n.id)))
		for _, v := range [...]int32{f.st, f.a, f.b, f.c} {
			sb.WriteByte(',')
			sb.WriteString(strconv.Itoa(int(v)))
		}
		sb.WriteByte(';')
	}
}

// dedup drops threads equal to an earlier one (alternatives that met again).
func dedup(ts []*stack) []*stack {
	if len(ts) < 2 {
		return ts
	}
	seen := make(map[string]bool, len(ts))
	out := ts[:0]
	var sb strings.Builder
	for _, t := range ts {
		sb.Reset()
		if t == nil {
			sb.WriteByte('$')
		} else {
			writeKey(&sb, t)
		}
		if k := sb.String(); !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	return out
}
