package tokenizer

import "container/heap"

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

// candidate is a possible merge of the symbol at pos with its right neighbour.
type candidate struct {
	rank, pos, id int32
}

// candidates is a min-heap by (rank, pos): the lowest rank merges first, the leftmost on ties, as in
// Hugging Face's BPE.
type candidates []candidate

func (h candidates) Len() int { return len(h) }
func (h candidates) Less(i, j int) bool {
	return h[i].rank < h[j].rank || h[i].rank == h[j].rank && h[i].pos < h[j].pos
}
func (h candidates) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *candidates) Push(x any)   { *h = append(*h, x.(candidate)) }
func (h *candidates) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
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
			q = append(q, candidate{rank: mg.rank, pos: int32(i), id: mg.id})
		}
	}
	heap.Init(&q)
	for q.Len() > 0 {
		c := heap.Pop(&q).(candidate)
		left := &syms[c.pos]
		if left.dead || left.next < 0 {
			continue
		}
		right := &syms[left.next]
		// The pair may have changed since c was queued; merge only if it still makes c.id.
		if mg, ok := m.merges[pairKey(left.id, right.id)]; !ok || mg.id != c.id {
			continue
		}
		left.id = c.id
		right.dead = true
		left.next = right.next
		if left.next >= 0 {
			syms[left.next].prev = c.pos
			if mg, ok := m.merges[pairKey(left.id, syms[left.next].id)]; ok {
				heap.Push(&q, candidate{rank: mg.rank, pos: c.pos, id: mg.id})
			}
		}
		if left.prev >= 0 {
			if mg, ok := m.merges[pairKey(syms[left.prev].id, left.id)]; ok {
				heap.Push(&q, candidate{rank: mg.rank, pos: left.prev, id: mg.id})
			}
		}
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		out = append(out, syms[i].id)
	}
	sc.syms, sc.queue = syms, q
	return out
}
