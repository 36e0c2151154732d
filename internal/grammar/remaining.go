package grammar

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
