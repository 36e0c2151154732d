package chat

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
)

// dumpJSON appends v as Python's json.dumps(v, ensure_ascii=False) writes it, which is what
// transformers' tojson filter calls: ", " and ": " separators, keys in order, non-ASCII kept,
// control characters escaped, integers as Python ints and other numbers as Python float reprs.
func dumpJSON(sb *strings.Builder, v *value) error {
	switch v.kind {
	case kNull:
		sb.WriteString("null")
	case kBool:
		if v.b {
			sb.WriteString("true")
		} else {
			sb.WriteString("false")
		}
	case kNumber:
		s, err := pyNumber(v.num)
		if err != nil {
			return err
		}
		sb.WriteString(s)
	case kString:
		writeJSONString(sb, v.str)
	case kArray:
		sb.WriteByte('[')
		for i, x := range v.arr {
			if i > 0 {
				sb.WriteString(", ")
			}
			if err := dumpJSON(sb, x); err != nil {
				return err
			}
		}
		sb.WriteByte(']')
	case kObject:
		sb.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				sb.WriteString(", ")
			}
			writeJSONString(sb, k)
			sb.WriteString(": ")
			if err := dumpJSON(sb, v.vals[i]); err != nil {
				return err
			}
		}
		sb.WriteByte('}')
	}
	return nil
}

// dumpString is dumpJSON into a new string.
func dumpString(v *value) (string, error) {
	var sb strings.Builder
	err := dumpJSON(&sb, v)
	return sb.String(), err
}

// writeJSONString writes s quoted the way json.dumps(ensure_ascii=False) does: only '"', '\\' and
// characters below U+0020 are escaped (the short forms \n \r \t \b \f, else \u00xx in lower case).
func writeJSONString(sb *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	sb.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		case '\b':
			sb.WriteString(`\b`)
		case '\f':
			sb.WriteString(`\f`)
		default:
			if c < 0x20 {
				sb.WriteString(`\u00`)
				sb.WriteByte(hex[c>>4])
				sb.WriteByte(hex[c&15])
			} else {
				sb.WriteByte(c)
			}
		}
	}
	sb.WriteByte('"')
}

// pyNumber converts a JSON number literal into the text Python prints after json.loads: a literal
// without '.', 'e' or 'E' is an int (so "-0" becomes "0"), anything else a float in repr form
// ("1e+16", "1e-05", "0.5", "2.0"); floats that overflow become "Infinity" / "-Infinity".
func pyNumber(lit string) (string, error) {
	if !strings.ContainsAny(lit, ".eE") {
		n, ok := new(big.Int).SetString(lit, 10)
		if !ok {
			return "", fmt.Errorf("bad integer %q", lit)
		}
		return n.String(), nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return "", fmt.Errorf("bad number %q", lit)
	}
	return pyFloatRepr(f), nil
}

// pyFloatRepr is Python's repr(float) as json.dumps prints it: the shortest digits that round-trip,
// positional notation when the decimal exponent is in [-4, 16), scientific otherwise.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // "-d.ddde±XX"
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	digits := strings.Replace(mant, ".", "", 1)
	decpt := exp + 1 // value = 0.digits × 10^decpt
	if decpt > -4 && decpt <= 16 {
		var s string
		switch {
		case decpt <= 0:
			s = "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			s = digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		default:
			s = digits[:decpt] + "." + digits[decpt:]
		}
		return sign + s
	}
	m := digits[:1]
	if len(digits) > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if exp < 0 {
		es, exp = "-", -exp
	}
	return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
}

// pyIsSpace is Python's str.isspace for one character: Go's unicode.IsSpace plus the information
// separators U+001C..U+001F, which Python also strips.
func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// pyTrim is Python's str.strip() (Jinja's trim filter).
func pyTrim(s string) string { return strings.TrimFunc(s, pyIsSpace) }

// pyTrimLeft is Python's str.lstrip().
func pyTrimLeft(s string) string { return strings.TrimLeftFunc(s, pyIsSpace) }

// pyTrimRight is Python's str.rstrip().
func pyTrimRight(s string) string { return strings.TrimRightFunc(s, pyIsSpace) }

// pyStr is the text Jinja prints for {{ v }} when v is a scalar (str() in Python): None, True,
// False, ints and float reprs. Arrays and objects would need Python's repr of containers, which
// lily does not reproduce; they are an error.
func pyStr(v *value) (string, error) {
	switch v.kind {
	case kNull:
		return "None", nil
	case kBool:
		if v.b {
			return "True", nil
		}
		return "False", nil
	case kNumber:
		s, err := pyNumber(v.num)
		if err != nil {
			return "", err
		}
		switch s { // Python's str(float) spells these differently from json.dumps
		case "Infinity":
			return "inf", nil
		case "-Infinity":
			return "-inf", nil
		}
		return s, nil
	case kString:
		return v.str, nil
	}
	return "", errors.New("printing an array or object as text (Python repr) is not supported")
}
