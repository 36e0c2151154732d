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

// numberState says whether a number frame is a complete number and whether it can read more.
func numberState(k kind, f frame) (done, more bool) {
	if k == kInteger {
		switch f.st {
		case 0, 1:
			return false, true
		case 2:
			return true, false
		}
		return true, f.a < 15
	}
	switch f.st {
	case 2:
		return true, true
	case 3, 5:
		return true, true
	case 8:
		return true, f.a < 2 // |exponent| ≤ 99: every such number fits a float64
	}
	return false, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

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

// stringByte reads c in a JSON string: f.c counts characters (only when the length is bounded, so
// that unbounded strings keep one state), f.a counts hex digits or continuation bytes still due,
// f.b holds the allowed range of the next continuation byte (lo | hi<<8).
func stringByte(n *Node, f frame, c byte) (frame, bool) {
	counting := n.min > 0 || n.max >= 0
	room := n.max < 0 || int(f.c) < n.max
	char := func() {
		if counting {
			f.c++
		}
	}
	switch f.st {
	case strOpen:
		if c == '"' {
			f.st = strBody
			return f, true
		}
	case strBody:
		switch {
		case c == '"':
			if int(f.c) >= n.min {
				f.st = strDone
				return f, true
			}
		case !room || c < 0x20:
		case c == '\\':
			f.st = strEscape
			return f, true
		case c < 0x80:
			char()
			return f, true
		default:
			need, lo, hi := utf8Lead(c)
			if need > 0 {
				char()
				f.st, f.a, f.b = strUTF8, int32(need), int32(lo)|int32(hi)<<8
				return f, true
			}
		}
	case strUTF8:
		if lo, hi := byte(f.b), byte(f.b>>8); c >= lo && c <= hi {
			if f.a--; f.a == 0 {
				f.st, f.b = strBody, 0
			} else {
				f.b = 0x80 | 0xBF<<8
			}
			return f, true
		}
	case strEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			char()
			f.st = strBody
			return f, true
		case 'u':
			f.st, f.a = strHex, 0
			return f, true
		}
	case strHex:
		if isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' {
			if f.a++; f.a == 4 {
				char()
				f.st, f.a = strBody, 0
			}
			return f, true
		}
	}
	return f, false
}

// utf8Lead returns how many continuation bytes lead byte c needs and the range of the first one
// (need 0: c cannot start a character).
func utf8Lead(c byte) (need int, lo, hi byte) {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 1, 0x80, 0xBF
	case c == 0xE0:
		return 2, 0xA0, 0xBF
	case c == 0xED:
		return 2, 0x80, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		return 2, 0x80, 0xBF
	case c == 0xF0:
		return 3, 0x90, 0xBF
	case c >= 0xF1 && c <= 0xF3:
		return 3, 0x80, 0xBF
	case c == 0xF4:
		return 3, 0x80, 0x8F
	}
	return 0, 0, 0
}

// numberByte reads c in a JSON number (states: 0 start, 1 after '-', 2 after a leading 0, 3 in
// the integer digits, 4 after '.', 5 in the fraction, 6 after 'e', 7 after the exponent's sign,
// 8 in the exponent; f.a counts the digits of the current part).
func numberByte(k kind, f frame, c byte) (frame, bool) {
	if _, more := numberState(k, f); !more {
		return f, false
	}
	d := isDigit(c)
	switch f.st {
	case 0, 1:
		switch {
		case c == '-' && f.st == 0:
			f.st = 1
		case c == '0':
			f.st = 2
		case d:
			f.st, f.a = 3, 1
		default:
			return f, false
		}
		return f, true
	}
	if k == kInteger {
		if f.st == 3 && d {
			f.a++
			return f, true
		}
		return f, false
	}
	switch {
	case (f.st == 3 || f.st == 5) && d && f.a < 16, f.st == 8 && d && f.a < 2:
		f.a++
	case f.st == 4 && d:
		f.st, f.a = 5, 1
	case (f.st == 6 || f.st == 7) && d:
		f.st, f.a = 8, 1
	case (f.st == 2 || f.st == 3) && c == '.':
		f.st = 4
	case (f.st == 2 || f.st == 3 || f.st == 5) && (c == 'e' || c == 'E'):
		f.st = 6
	case f.st == 6 && (c == '+' || c == '-'):
		f.st = 7
	default:
		return f, false
	}
	return f, true
}

// remaining is the fewest bytes that complete thread t.
func remaining(t *stack) int {
	s := 0
	for ; t != nil; t = t.up {
		s += frameRemaining(t.f)
	}
	return min(s, inf)
}

func frameRemaining(f frame) int {
	n := f.n
	switch n.kind {
	case kLit:
		return len(n.lit) - int(f.st)
	case kUntil:
		if f.st == 1 {
			return 0
		}
		return len(n.lit) - int(f.a)
	case kAlt:
		return n.short // waiting under its parent's next element: not started
	case kSeq:
		s := 0
		for _, k := range n.kids[f.st:] {
			s += k.short
		}
		return s
	case kString:
		left := max(0, n.min-int(f.c))
		switch f.st {
		case strOpen:
			return n.short
		case strBody:
			return 1 + left
		case strUTF8:
			return int(f.a) + 1 + left
		case strEscape:
			return 2 + max(0, left-1)
		case strHex:
			return 4 - int(f.a) + 1 + max(0, left-1)
		}
		return 0
	case kInteger, kNumber:
		if done, _ := numberState(n.kind, f); done {
			return 0
		}
		return 1
	case kObject:
		switch f.st {
		case cOpen:
			return n.short
		case cFirst:
			s, first := 1, f.b == 0
			for _, p := range n.props[f.a:] {
				if p.required {
					key := p.next
					if first {
						key = p.first
					}
					s, first = s+key.short+p.value.short, false
				}
			}
			return s
		}
		return 0
	case kAnyObject, kArray:
		item := n.item.short
		switch f.st {
		case cOpen:
			return n.short
		case cFirst:
			if n.kind == kAnyObject || n.min == 0 {
				return 1
			}
			return n.min*item + n.min - 1 + 1
		case cAfter:
			if n.kind == kAnyObject {
				return 1
			}
			return max(0, n.min-int(f.a))*(item+1) + 1
		case cComma:
			if n.kind == kAnyObject {
				return item + 1
			}
			return item + max(0, n.min-int(f.a)-1)*(item+1) + 1
		}
	}
	return 0
}
