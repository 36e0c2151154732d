package device

import (
	"fmt"
	"strings"

	"github.com/lily-engine/lily/metal/emu"
)

// Access says, per kernel, which [[buffer(i)]] arguments the kernel may write: those declared
// `device T*` without const (atomics included). The concurrent encoder's barriers are computed
// from it: a dispatch only reads its const and constant arguments.
type Access struct {
	writes map[string]uint32 // kernel → bit i set when buffer(i) is writable
}

// NewAccess parses the kernels' signatures in src (Source()).
func NewAccess(src string) (Access, error) {
	ks, err := emu.ParseKernels(src)
	if err != nil {
		return Access{}, fmt.Errorf("metal: kernel signatures: %w", err)
	}
	m := make(map[string]emu.Kernel, len(ks))
	for _, k := range ks {
		m[k.Name] = k
	}
	return accessOf(m), nil
}

// accessOf is the access table of parsed kernel signatures.
func accessOf(ks map[string]emu.Kernel) Access {
	a := Access{writes: make(map[string]uint32, len(ks))}
	for _, k := range ks {
		var w uint32
		for _, p := range k.Params {
			if p.Buffer >= 0 && writableType(p.Type) {
				w |= 1 << p.Buffer
			}
		}
		a.writes[k.Name] = w
	}
	return a
}

// writableType reports whether a parameter type as written is a non-const device pointer.
func writableType(typ string) bool {
	f := strings.FieldsFunc(typ, func(r rune) bool { return r == ' ' || r == '*' || r == '&' })
	dev, cst := false, false
	for _, w := range f {
		dev = dev || w == "device"
		cst = cst || w == "const"
	}
	return dev && !cst
}

// writable reports whether kernel k may write its buffer slot i. A kernel the table does not know
// (no parsed signature) is taken to write every argument, which only costs barriers.
func (a Access) writable(k string, i int) bool {
	w, ok := a.writes[k]
	return !ok || w&(1<<i) != 0
}

// span is a byte range [off, end) of one buffer.
type span struct {
	buf      Buffer
	off, end int
}

func (s span) overlaps(t span) bool { return s.buf == t.buf && s.off < t.end && t.off < s.end }

// hazards tracks what the dispatches since the last barrier read and wrote, to decide where the
// next barrier must go: before a dispatch that reads or writes a range an earlier one wrote
// (read-after-write, write-after-write), or writes a range an earlier one read (write-after-read;
// in a concurrent pass the earlier dispatch may still be reading).
type hazards struct {
	reads, writes []span
}

func (h *hazards) reset() { h.reads, h.writes = h.reads[:0], h.writes[:0] }

// spans splits a dispatch's buffer arguments into the ranges it reads and those it writes.
func (a Access) spans(c *Dispatch, rd, wr []span) ([]span, []span) {
	for i, arg := range c.Args {
		if arg.Buf == nil {
			continue
		}
		off, end, err := arg.window()
		if err != nil { // Check rejected it already; stay conservative
			off, end = 0, arg.Buf.Len()
		}
		s := span{arg.Buf, off, end}
		if a.writable(c.Kernel, i) {
			wr = append(wr, s)
		} else {
			rd = append(rd, s)
		}
	}
	return rd, wr
}

// conflicts reports whether a dispatch reading rd and writing wr must wait for the dispatches h
// holds.
func (h *hazards) conflicts(rd, wr []span) bool {
	for _, w := range h.writes {
		for _, s := range rd {
			if s.overlaps(w) {
				return true
			}
		}
		for _, s := range wr {
			if s.overlaps(w) {
				return true
			}
		}
	}
	for _, r := range h.reads {
		for _, s := range wr {
			if s.overlaps(r) {
				return true
			}
		}
	}
	return false
}

func (h *hazards) add(rd, wr []span) {
	h.reads, h.writes = append(h.reads, rd...), append(h.writes, wr...)
}
