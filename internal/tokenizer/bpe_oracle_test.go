package tokenizer

// oracleMerge is the earlier BPE merge loop, kept as a test oracle for merge: a heap of full candidates
// (rank, position and the pair's ids), each checked against the symbols when it is popped.
func (m *bpe) oracleMerge(out []int32, word string) []int32 {
	type sym struct {
		id         int32
		prev, next int32
		dead       bool
	}
	type cand struct{ rank, pos, a, b, id int32 }
	before := func(c, d cand) bool { return c.rank < d.rank || c.rank == d.rank && c.pos < d.pos }
	var q []cand
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(q) {
				return
			}
			k := l
			if r := l + 1; r < len(q) && before(q[r], q[l]) {
				k = r
			}
			if !before(q[k], q[i]) {
				return
			}
			q[i], q[k] = q[k], q[i]
			i = k
		}
	}
	push := func(c cand) {
		q = append(q, c)
		for i := len(q) - 1; i > 0; {
			p := (i - 1) / 2
			if !before(q[i], q[p]) {
				break
			}
			q[i], q[p] = q[p], q[i]
			i = p
		}
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[m.bl.encode(word)]; ok {
			return append(out, id)
		}
	}
	syms := make([]sym, len(word))
	for i := range syms {
		syms[i] = sym{id: m.byteID[word[i]], prev: int32(i - 1), next: int32(i + 1)}
	}
	syms[len(syms)-1].next = -1
	for i := 0; i+1 < len(syms); i++ {
		if mg, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			q = append(q, cand{mg.rank, int32(i), syms[i].id, syms[i+1].id, mg.id})
		}
	}
	for i := len(q)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(q) > 0 {
		c := q[0]
		q[0] = q[len(q)-1]
		q = q[:len(q)-1]
		down(0)
		left := &syms[c.pos]
		if left.dead || left.next < 0 {
			continue
		}
		right := &syms[left.next]
		if left.id != c.a || right.id != c.b {
			continue
		}
		left.id = c.id
		right.dead = true
		left.next = right.next
		if left.next >= 0 {
			syms[left.next].prev = c.pos
			b := syms[left.next].id
			if mg, ok := m.merges[pairKey(left.id, b)]; ok {
				push(cand{mg.rank, c.pos, left.id, b, mg.id})
			}
		}
		if left.prev >= 0 {
			a := syms[left.prev].id
			if mg, ok := m.merges[pairKey(a, left.id)]; ok {
				push(cand{mg.rank, left.prev, a, left.id, mg.id})
			}
		}
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		out = append(out, syms[i].id)
	}
	return out
}
