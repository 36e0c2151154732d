package tokenizer

// merge is one BPE merge rule: the pair it joins has this rank (lower merges first) and makes token id.
type merge struct {
	rank int32
	id   int32
}

// pairKey packs two token ids into a map key.
func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// bpe holds what byte-level BPE needs: the id of each single byte and the merge rules by id pair.
type bpe struct {
	byteID       [256]int32
	merges       map[uint64]merge
	ignoreMerges bool             // look a whole pre-token up in the vocabulary before merging
	vocab        map[string]int32 // byte-level token text → id (used with ignoreMerges)
	bl           *byteLevel
}

// symbol is one part of a word being merged; the parts form a doubly linked list over positions.
type symbol struct {
	id         int32
	prev, next int32 // positions of the neighbours, -1 at the ends
	dead       bool  // merged into its left neighbour
}

// candidate is a possible merge of the symbol at pos (id a) with its right neighbour (id b) into id.
type candidate struct {
	rank, pos, a, b, id int32
}

// candidates is a binary min-heap by (rank, pos): the lowest rank merges first, the leftmost on ties,
// as in Hugging Face's BPE. It is written out (not container/heap) to avoid boxing each entry.
type candidates []candidate

func (c candidate) before(d candidate) bool {
	return c.rank < d.rank || c.rank == d.rank && c.pos < d.pos
}

func (h *candidates) push(c candidate) {
	q := append(*h, c)
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q[i].before(q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
	*h = q
}

func (h *candidates) pop() candidate {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	q.down(0)
	*h = q
	return top
}

func (h candidates) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h candidates) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// scratch is per-call working memory for encoding; it is never shared between goroutines.
type scratch struct {
	syms  []symbol
	queue candidates
	cache map[string][]int32
}

// maxCachedWord bounds the pre-tokens remembered within one Encode call; longer ones rarely repeat.
const maxCachedWord = 64

// appendWord appends the ids of one pre-token (raw bytes, before the byte-level map) to out.
func (m *bpe) appendWord(out []int32, word string, sc *scratch) []int32 {
	if len(word) == 1 {
		return append(out, m.byteID[word[0]])
	}
	if len(word) <= maxCachedWord {
		if ids, ok := sc.cache[word]; ok {
			return append(out, ids...)
		}
	}
	n := len(out)
	out = m.merge(out, word, sc)
	if len(word) <= maxCachedWord {
		sc.cache[word] = append([]int32(nil), out[n:]...)
	}
	return out
}

// merge runs the BPE merges over word and appends the resulting ids to out.
func (m *bpe) merge(out []int32, word string, sc *scratch) []int32 {
	if m.ignoreMerges {
		if id, ok := m.vocab[m.bl.encode(word)]; ok {
			return append(out, id)
		}
	}
	syms := sc.syms[:0]
	for i := 0; i < len(word); i++ {
		syms = append(syms, symbol{id: m.byteID[word[i]], prev: int32(i - 1), next: int32(i + 1)})
	}
	syms[len(syms)-1].next = -1
	q := sc.queue[:0]
	for i := 0; i+1 < len(syms); i++ {
		if mg, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			q = append(q, candidate{mg.rank, int32(i), syms[i].id, syms[i+1].id, mg.id})
		}
	}
	q.init()
	for len(q) > 0 {
		c := q.pop()
		left := &syms[c.pos]
		if left.dead || left.next < 0 {
			continue
		}
		right := &syms[left.next]
		if left.id != c.a || right.id != c.b {
			continue // the pair changed since c was queued
		}
		left.id = c.id
		right.dead = true
		left.next = right.next
		if left.next >= 0 {
			syms[left.next].prev = c.pos
			b := syms[left.next].id
			if mg, ok := m.merges[pairKey(left.id, b)]; ok {
				q.push(candidate{mg.rank, c.pos, left.id, b, mg.id})
			}
		}
		if left.prev >= 0 {
			a := syms[left.prev].id
			if mg, ok := m.merges[pairKey(a, left.id)]; ok {
				q.push(candidate{mg.rank, left.prev, a, left.id, mg.id})
			}
		}
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		out = append(out, syms[i].id)
	}
	sc.syms, sc.queue = syms, q
	return out
}
