package grammar

import (
	"bytes"
	"math"
	"math/bits"
	"slices"
	"sync"
	"unicode/utf8"
)

// maxCached bounds the masks a Vocab keeps (each is V bits: 31 KB for the real vocabulary).
const maxCached = 512

// Vocab is a tokenizer's vocabulary as byte strings, sorted so that tokens sharing a prefix are
// neighbours: the allowed set of a matcher is found in one pass that feeds each distinct prefix
// once and skips every token under a dead prefix. It caches the set per matcher state. It is safe
// for concurrent use.
type Vocab struct {
	size  int      // logits length
	byID  [][]byte // id → bytes (nil: never allowed)
	toks  [][]byte // distinct non-empty byte strings, sorted
	ids   [][]int32
	plain []bool // toks[i] is whole UTF-8 characters with no quote, backslash or control byte
	mu    sync.Mutex
	cache map[string]*allowed
}

// allowed is the mask of one matcher state.
type allowed struct {
	bits     []uint64 // by id
	maxAfter int      // the largest Remaining after any allowed token
}

// NewVocab indexes the tokens: tokens[id] is the bytes of id; ids with no bytes (padding rows,
// ids left out such as special tokens) are never allowed. size is the logits length.
func NewVocab(tokens [][]byte, size int) *Vocab {
	v := &Vocab{size: size, byID: tokens, cache: map[string]*allowed{}}
	order := make([]int32, 0, len(tokens))
	for id, t := range tokens {
		if len(t) > 0 && id < size {
			order = append(order, int32(id))
		}
	}
	slices.SortFunc(order, func(a, b int32) int { return bytes.Compare(tokens[a], tokens[b]) })
	for _, id := range order {
		if n := len(v.toks); n > 0 && bytes.Equal(v.toks[n-1], tokens[id]) {
			v.ids[n-1] = append(v.ids[n-1], id)
			continue
		}
		v.toks = append(v.toks, tokens[id])
		v.ids = append(v.ids, []int32{id})
	}
	v.plain = make([]bool, len(v.toks))
	for i, t := range v.toks {
		v.plain[i] = utf8.Valid(t) && !slices.ContainsFunc(t, func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' })
	}
	return v
}

// Bytes returns the bytes of id (nil for an id never allowed).
func (v *Vocab) Bytes(id int32) []byte {
	if id < 0 || int(id) >= len(v.byID) {
		return nil
	}
	return v.byID[id]
}

// Size is the logits length the vocabulary masks.
func (v *Vocab) Size() int { return v.size }

// Mask sets to -Inf the logits [V] of every token that would take m out of the language or leave
// more bytes to complete it than budget tokens can write (budget < 0: no limit; when no token
// fits the budget, which counts one byte per token, the budget is dropped rather than the text).
// It reports whether any token is allowed.
func (v *Vocab) Mask(logits []float32, m *Matcher, budget int) bool {
	a := v.allowedOf(m)
	keep := a.bits
	if budget >= 0 && a.maxAfter > budget {
		if within := v.withinBudget(m, a, budget); slices.ContainsFunc(within, func(w uint64) bool { return w != 0 }) {
			keep = within
		}
	}
	any := false
	negInf := float32(math.Inf(-1))
	for w := 0; w*64 < len(logits); w++ {
		lo, hi := w*64, min(w*64+64, len(logits))
		var word uint64
		if w < len(keep) {
			word = keep[w]
		}
		switch word {
		case 0:
			for i := lo; i < hi; i++ {
				logits[i] = negInf
			}
		case ^uint64(0):
			any = true
		default:
			any = true
			for i := lo; i < hi; i++ {
				if word&(1<<(i-lo)) == 0 {
					logits[i] = negInf
				}
			}
		}
	}
	return any
}

// withinBudget filters a to the tokens after which the rest fits in budget bytes (one token
// writes at least one byte, and every byte is a token of a byte-level vocabulary).
func (v *Vocab) withinBudget(m *Matcher, a *allowed, budget int) []uint64 {
	out := make([]uint64, len(a.bits))
	for i, t := range v.toks {
		id := v.ids[i][0]
		if a.bits[id>>6]&(1<<(id&63)) == 0 {
			continue
		}
		if m.Feed(t).Remaining() <= budget {
			for _, id := range v.ids[i] {
				out[id>>6] |= 1 << (id & 63)
			}
		}
	}
	return out
}

func (v *Vocab) allowedOf(m *Matcher) *allowed {
	k := m.key()
	v.mu.Lock()
	a := v.cache[k]
	v.mu.Unlock()
	if a != nil {
		return a
	}
	a = v.compute(m)
	v.mu.Lock()
	if len(v.cache) >= maxCached {
		clear(v.cache)
	}
	v.cache[k] = a
	v.mu.Unlock()
	return a
}

// transparent returns, for a matcher with one thread inside a JSON string of unbounded length or
// inside text up to a terminator (with no part of it matched), which tokens leave its state as it
// is: those are allowed without feeding them. nil when there is no such shortcut.
func (v *Vocab) transparent(m *Matcher) func(i int) bool {
	if len(m.threads) != 1 || m.threads[0] == nil {
		return nil
	}
	f := m.threads[0].f
	switch n := f.n; {
	case n.kind == kString && f.st == strBody && n.min == 0 && n.max < 0:
		return func(i int) bool { return v.plain[i] }
	case n.kind == kUntil && f.st == 0 && f.a == 0:
		first := n.lit[0]
		return func(i int) bool { return bytes.IndexByte(v.toks[i], first) < 0 }
	}
	return nil
}

// compute finds the tokens allowed after m: the transparent ones at once, the rest by walking the
// sorted tokens with one matcher per prefix depth.
func (v *Vocab) compute(m *Matcher) *allowed {
	a := &allowed{bits: make([]uint64, (v.size+63)/64)}
	order := make([]int, 0, len(v.toks))
	if same := v.transparent(m); same != nil {
		rem := m.Remaining()
		for i := range v.toks {
			if !same(i) {
				order = append(order, i)
				continue
			}
			for _, id := range v.ids[i] {
				a.bits[id>>6] |= 1 << (id & 63)
			}
			a.maxAfter = max(a.maxAfter, rem)
		}
	} else {
		for i := range v.toks {
			order = append(order, i)
		}
	}
	states := []*Matcher{m}
	var prev []byte
	for k := 0; k < len(order); {
		i := order[k]
		t := v.toks[i]
		d := min(commonPrefix(prev, t), len(states)-1)
		states = states[:d+1]
		for d < len(t) {
			next := states[d].feedByte(t[d])
			if next.Dead() {
				break
			}
			states = append(states, next)
			d++
		}
		prev = t
		if d == len(t) {
			for _, id := range v.ids[i] {
				a.bits[id>>6] |= 1 << (id & 63)
			}
			a.maxAfter = max(a.maxAfter, states[d].Remaining())
			k++
			continue
		}
		// t[:d+1] leads nowhere: skip every token under it.
		dead := t[:d+1]
		for k++; k < len(order) && bytes.HasPrefix(v.toks[order[k]], dead); k++ {
		}
	}
	return a
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// Count returns how many ids a mask computed for m allows (for tests and benchmarks).
func (v *Vocab) Count(m *Matcher) int {
	n := 0
	for _, w := range v.allowedOf(m).bits {
		n += bits.OnesCount64(w)
	}
	return n
}
