package fast

import (
	"slices"
	"sync"
)

// Snapshots share the KV arrays of the session they copy instead of cloning them: a cache's rows
// are written once, at the session's position, and never again, so a snapshot's rows stay valid
// in the session's arrays as long as nobody writes below them. That is what a prompt-cache
// snapshot at a chat's last turn and the restore of the next request would otherwise copy each
// time: the whole context's keys and values (at the real shapes 168 MiB at 8K tokens, 2.7 GiB at
// 128K, where a second copy would not fit a 24 GB machine beside the weights).
//
// kvShare guards one set of arrays (a layer's keys and values) once a snapshot shares them: the
// live snapshots' row counts, and the one session that may append to the arrays in place (the
// owner: the session the arrays came from, or one that restored a snapshot of them while no other
// owned them). A session writes rows ≥ pos in place only while it is the owner and no live
// snapshot covers a row ≥ pos (writable); otherwise its reserve copies the rows below pos into
// arrays of its own first. In the engine's flows (restore the cached snapshot, release it,
// prefill the new turn, snapshot again) no copy happens.
type kvShare struct {
	mu     sync.Mutex
	owner  *Session
	rows   []int     // one entry per live snapshot: the rows it covers
	k, v   []uint16  // the arrays at their full capacity
	kf, vf []float32 // (float32 caches)
}

// writable reports whether session s may write rows ≥ pos of the arrays in place.
func (sh *kvShare) writable(s *Session, pos int) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.owner == s && (len(sh.rows) == 0 || slices.Max(sh.rows) <= pos)
}

// unshare detaches c from its share (c now holds arrays of its own), giving up s's ownership.
func (c *kvCache) unshare(s *Session) {
	if sh := c.shared; sh != nil {
		sh.mu.Lock()
		if sh.owner == s {
			sh.owner = nil
		}
		sh.mu.Unlock()
	}
	c.shared = nil
}

// pin returns a view of c's first rows rows (of w values) for a snapshot, sharing the arrays,
// with c (owned by s) joined to their share.
func (c *kvCache) pin(s *Session, rows, w int) *kvCache {
	if c.shared == nil {
		c.shared = &kvShare{owner: s, k: c.k[:cap(c.k)], v: c.v[:cap(c.v)], kf: c.kf[:cap(c.kf)], vf: c.vf[:cap(c.vf)]}
	}
	sh := c.shared
	sh.mu.Lock()
	sh.rows = append(sh.rows, rows)
	sh.mu.Unlock()
	return sh.view(c.f32, rows*w)
}

// view returns a cache of the share's first n values, at the arrays' full capacity.
func (sh *kvShare) view(f32 bool, n int) *kvCache {
	v := &kvCache{f32: f32, shared: sh}
	if f32 {
		v.kf, v.vf = sh.kf[:n], sh.vf[:n]
	} else {
		v.k, v.v = sh.k[:n], sh.v[:n]
	}
	return v
}

// unpin drops one snapshot's entry of rows rows.
func (sh *kvShare) unpin(rows int) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if i := slices.Index(sh.rows, rows); i >= 0 {
		sh.rows = slices.Delete(sh.rows, i, i+1)
	}
}

// restore returns session s's cache for a snapshot's view p: the same arrays at their full
// capacity, s their owner if no other session is (else s's first write copies them).
func (p *kvCache) restore(s *Session) *kvCache {
	sh := p.shared
	sh.mu.Lock()
	if sh.owner == nil {
		sh.owner = s
	}
	sh.mu.Unlock()
	return sh.view(p.f32, len(p.k)+len(p.kf))
}
