package grammar

// The JSON tokens: strings (UTF-8 checked byte by byte) and numbers.

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
