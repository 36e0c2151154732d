package grammar

// States of the multi-state kinds.
const (
	strOpen, strBody, strEscape, strHex, strUTF8, strDone int32 = 0, 1, 2, 3, 4, 5

	// kObject, kAnyObject and kArray: 0 before the opening bracket, 1 after it, 2 after a member
	// or item, 3 after a comma, 4 closed.
	cOpen, cFirst, cAfter, cComma, cClosed int32 = 0, 1, 2, 3, 4
)

// replace returns t with its top frame replaced by f.
func replace(t *stack, f frame) *stack { return &stack{f: f, up: t.up, depth: t.depth} }

// expand appends to out the threads that t becomes once every move that reads no byte is made:
// each either nil (the text is complete) or with a top frame ready to read a byte.
func expand(t *stack, out []*stack) []*stack {
	if t == nil {
		return append(out, nil)
	}
	if t.depth > maxDepth {
		return out
	}
	f := t.f
	n := f.n
	switch n.kind {
	case kLit:
		if int(f.st) == len(n.lit) {
			return expand(t.up, out)
		}
	case kSeq:
		if int(f.st) == len(n.kids) {
			return expand(t.up, out)
		}
		f.st++
		return expand(push(replace(t, f), frame{n: n.kids[f.st-1]}), out)
	case kAlt:
		for _, k := range n.kids {
			out = expand(push(t.up, frame{n: k}), out)
		}
		return out
	case kStar:
		out = expand(t.up, out)
		return expand(push(t, frame{n: n.item}), out)
	case kWS:
		out = expand(t.up, out)
		if n.max >= 0 && int(f.st) >= n.max {
			return out
		}
	case kString:
		if f.st == strDone {
			return expand(t.up, out)
		}
	case kInteger, kNumber:
		done, more := numberState(n.kind, f)
		if done {
			out = expand(t.up, out)
		}
		if !more {
			return out
		}
	case kObject:
		switch {
		case f.st == cClosed:
			return expand(t.up, out)
		case f.st == cFirst && int(f.a) < len(n.props):
			p := n.props[f.a]
			skip := f
			skip.a++
			if !p.required {
				out = expand(replace(t, skip), out)
			}
			key := p.first
			if f.b != 0 {
				key = p.next
			}
			skip.b = 1
			return expand(push(push(replace(t, skip), frame{n: p.value}), frame{n: key}), out)
		}
	case kAnyObject:
		switch f.st {
		case cClosed:
			return expand(t.up, out)
		case cFirst:
			out = append(out, t) // '}'
			return expand(push(replace(t, frame{n: n, st: cAfter}), frame{n: n.item}), out)
		case cComma:
			return expand(push(replace(t, frame{n: n, st: cAfter}), frame{n: n.item}), out)
		}
	case kArray:
		switch f.st {
		case cClosed:
			return expand(t.up, out)
		case cFirst:
			if n.min == 0 {
				out = append(out, t) // ']'
			}
			if n.max == 0 {
				return out
			}
			return expand(push(replace(t, frame{n: n, st: cAfter, a: 1}), frame{n: n.item}), out)
		case cComma:
			return expand(push(replace(t, frame{n: n, st: cAfter, a: f.a + 1}), frame{n: n.item}), out)
		}
	case kUntil:
		if f.st == 1 {
			return expand(t.up, out)
		}
	}
	return append(out, t)
}

// consume reads c with t's ready top frame; false when c cannot come next.
func consume(t *stack, c byte) (*stack, bool) {
	f := t.f
	n := f.n
	ok := false
	switch n.kind {
	case kLit:
		ok = n.lit[f.st] == c
		f.st++
	case kWS:
		ok = isWS(c)
		f.st++
	case kString:
		f, ok = stringByte(n, f, c)
	case kInteger, kNumber:
		f, ok = numberByte(n.kind, f, c)
	case kObject:
		switch {
		case f.st == cOpen && c == '{':
			f.st, ok = cFirst, true
		case f.st == cFirst && int(f.a) == len(n.props) && c == '}':
			f.st, ok = cClosed, true
		}
	case kAnyObject, kArray:
		open, close := byte('{'), byte('}')
		if n.kind == kArray {
			open, close = '[', ']'
		}
		switch {
		case f.st == cOpen && c == open:
			f.st, ok = cFirst, true
		case f.st == cFirst && c == close && (n.kind == kAnyObject || n.min == 0), f.st == cAfter && c == close && (n.kind == kAnyObject || int(f.a) >= n.min):
			f.st, ok = cClosed, true
		case f.st == cAfter && c == ',' && (n.kind == kAnyObject || n.max < 0 || int(f.a) < n.max):
			f.st, ok = cComma, true
		}
	case kUntil:
		f.a = int32(kmpNext(n.lit, int(f.a), c))
		if int(f.a) == len(n.lit) {
			f.st = 1
		}
		ok = true
	}
	if !ok {
		return nil, false
	}
	return replace(t, f), true
}

// kmpNext is the length of the longest prefix of end that is a suffix of end[:a]+c.
func kmpNext(end string, a int, c byte) int {
	for k := min(a+1, len(end)); k > 0; k-- {
		if end[k-1] != c {
			continue
		}
		// end[:k-1] must be a suffix of end[:a].
		if end[:k-1] == end[a-(k-1):a] {
			return k
		}
	}
	return 0
}
