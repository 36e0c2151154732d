package chat

import (
	"testing"
)

// Expected values printed by Python 3: json.dumps(json.loads(literal)).
func TestPyNumber(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"0", "0"}, {"-0", "0"}, {"42", "42"}, {"-7", "-7"},
		{"123456789012345678901234567890", "123456789012345678901234567890"},
		{"0.0", "0.0"},
		{"-0.0", "-0.0"},
		{"1.0", "1.0"},
		{"1e16", "1e+16"},
		{"1e15", "1000000000000000.0"},
		{"9999999999999998.0", "9999999999999998.0"},
		{"1e-4", "0.0001"},
		{"1e-5", "1e-05"},
		{"0.00012345", "0.00012345"},
		{"123.456", "123.456"},
		{"5e-324", "5e-324"},
		{"1.7976931348623157e308", "1.7976931348623157e+308"},
		{"1e22", "1e+22"},
		{"0.1", "0.1"},
		{"2.5e-7", "2.5e-07"},
		{"1e400", "Infinity"},
		{"-1e400", "-Infinity"},
		{"3.0e2", "300.0"},
		{"12345678901234567.0", "1.2345678901234568e+16"},
	} {
		if got, err := pyNumber(c.in); err != nil || got != c.want {
			t.Errorf("pyNumber(%s) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestDumpJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"b":1,"a":[true,false,null,{}],"c":"x"}`, `{"b": 1, "a": [true, false, null, {}], "c": "x"}`},
		{`{"a":1,"b":2,"a":3}`, `{"a": 3, "b": 2}`}, // a dict keeps a repeated key's first place
		{`"\u00e9\u2603\ud83d\ude00 \"\\/ \u0000\u001f\u007f\b\f\n\r\t"`, `"é☃😀 \"\\/ \u0000\u001f` + "\x7f" + `\b\f\n\r\t"`},
		{` [ ] `, `[]`},
	} {
		v, err := decodeValue([]byte(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got, err := dumpString(v); err != nil || got != c.want {
			t.Errorf("dump(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}

func TestDecodeValueErrors(t *testing.T) {
	for _, in := range []string{``, ` `, `{`, `[1 2]`, `{"a" 1}`, `{"a":1,}`, `[1] 2`, `01`, `nul`} {
		if _, err := decodeValue([]byte(in)); err == nil {
			t.Errorf("decodeValue(%q): no error", in)
		}
	}
}

func TestPyTrim(t *testing.T) {
	// Python strips U+001C..U+001F, NEL, NBSP and the Unicode spaces, but not U+200B.
	if got := pyTrim("\x1c\x1d\x1e\x1f\u0085\u00a0\u3000 x \u2028\u2029\u202f\u205f\t"); got != "x" {
		t.Errorf("pyTrim = %q", got)
	}
	if got := pyTrim("\u200bx\u200b"); got != "\u200bx\u200b" {
		t.Errorf("pyTrim stripped U+200B: %q", got)
	}
}
