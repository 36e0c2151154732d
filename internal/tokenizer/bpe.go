package tokenizer

import "slices"

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

// symbol is one part of a word being merged; the parts form a doubly linked list over byte positions.
// rank and mid describe the pair this symbol makes with its right neighbour: the merge's rank and the id
// it makes, or noPair. A merged-away symbol has id dead.
type symbol struct {
	id, prev, next, rank, mid int32
}

const (
	noPair = int32(-1) // rank of a symbol whose pair with its right neighbour has no merge
	dead   = int32(-1) // id of a symbol merged into its left neighbour
)

// queue is a 4-ary min-heap of candidate merges, each packed as rank<<32 | position so that one integer
// comparison orders them by rank, the leftmost on ties, as Hugging Face's BPE does. An entry is stale
// when the symbol at its position is dead or its pair's rank has changed; stale entries are skipped when
// popped. An entry can never look current by accident: the bytes a pair at a position covers only grow,
// so a position holds a given pair at most once.
type queue []uint64

func (h *queue) push(v uint64) {
	q := append(*h, v)
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 4
		if q[p] <= v {
			break
		}
		q[i] = q[p]
		i = p
	}
	q[i] = v
	*h = q
}

func (h *queue) pop() uint64 {
	q := *h
	top := q[0]
	n := len(q) - 1
	v := q[n]
	q = q[:n]
	if n > 0 {
		q.sift(0, v)
	}
	*h = q
	return top
}

// sift places v at hole i or below it.
func (h queue) sift(i int, v uint64) {
	n := len(h)
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for k := c + 1; k < min(c+4, n); k++ {
			if h[k] < h[m] {
				m = k
			}
		}
		if h[m] >= v {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = v
}

func entry(rank, pos int32) uint64 { return uint64(uint32(rank))<<32 | uint64(uint32(pos)) }

// scratch is per-call working memory for encoding; it is never shared between goroutines.
type scratch struct {
	syms  []symbol
	first []uint64 // the word's first pairs, sorted
	queue queue    // the pairs merges make
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

// merge runs the BPE merges over word and appends the resulting ids to out. Its work is O(n log n) in
// the word's length n (one sort, then a heap of only the pairs that merges make), its memory 20 bytes a
// symbol and 8 a queued pair (at most 3n of them), in scratch reused across words.
func (m *bpe) merge(out []int32, word string, sc *scratch) []int32 {
	if m.ignoreMerges {
		if id, ok := m.vocab[m.bl.encode(word)]; ok {
			return append(out, id)
		}
	}
	n := len(word)
	if cap(sc.syms) < n {
		sc.syms = make([]symbol, n)
	}
	syms := sc.syms[:n] // syms: [n], one per byte to start with
	for i := range n {
		syms[i] = symbol{id: m.byteID[word[i]], prev: int32(i - 1), next: int32(i + 1), rank: noPair}
	}
	syms[n-1].next = -1
	if cap(sc.first) < n {
		sc.first, sc.queue = make([]uint64, 0, n), make(queue, 0, n)
	}
	first, q := sc.first[:0], sc.queue[:0]
	for i := 0; i+1 < n; i++ {
		if mg, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			syms[i].rank, syms[i].mid = mg.rank, mg.id
			first = append(first, entry(mg.rank, int32(i)))
		}
	}
	// The first pairs are sorted once and read in order; only the pairs merges make go through the heap.
	slices.Sort(first)
	for f := 0; f < len(first) || len(q) > 0; {
		var e uint64
		if len(q) == 0 || f < len(first) && first[f] < q[0] {
			e = first[f]
			f++
		} else {
			e = q.pop()
		}
		pos, rank := int32(uint32(e)), int32(e>>32)
		left := &syms[pos]
		if left.id == dead || left.rank != rank {
			continue // stale: the pair at pos changed since e was queued
		}
		right := &syms[left.next]
		left.id = left.mid
		right.id = dead
		left.next = right.next
		left.rank = noPair
		if left.next >= 0 {
			syms[left.next].prev = pos
			if mg, ok := m.merges[pairKey(left.id, syms[left.next].id)]; ok {
				left.rank, left.mid = mg.rank, mg.id
				q.push(entry(mg.rank, pos))
			}
		}
		if left.prev >= 0 {
			p := &syms[left.prev]
			p.rank = noPair
			if mg, ok := m.merges[pairKey(p.id, left.id)]; ok {
				p.rank, p.mid = mg.rank, mg.id
				q.push(entry(mg.rank, left.prev))
			}
		}
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		out = append(out, syms[i].id)
	}
	sc.first, sc.queue = first, q
	return out
}
