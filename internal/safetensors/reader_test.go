package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// testTensor is one tensor for buildFile.
type testTensor struct {
	name  string
	dtype DType
	shape []int
	data  []byte
}

// buildFile encodes tensors as a safetensors file, laid out in the given order.
func buildFile(t testing.TB, meta map[string]string, ts ...testTensor) []byte {
	t.Helper()
	hdr := map[string]any{}
	if meta != nil {
		hdr["__metadata__"] = meta
	}
	var data []byte
	for _, x := range ts {
		hdr[x.name] = map[string]any{"dtype": x.dtype.String(), "shape": x.shape,
			"data_offsets": []int{len(data), len(data) + len(x.data)}}
		data = append(data, x.data...)
	}
	j, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	return assemble(j, data)
}

// assemble prefixes a raw JSON header with its length and appends data.
func assemble(header, data []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}

func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "model.safetensors")
	noErr(t, os.WriteFile(p, b, 0o644))
	return p
}

func TestOpenReadsTensorsZeroCopy(t *testing.T) {
	a := testTensor{"b.weight", BF16, []int{2, 3}, seq(12)}
	b := testTensor{"a.packed", U32, []int{4}, seq(16)} // stored after a, at data offset 12
	c := testTensor{"z.empty", F32, []int{0, 5}, nil}
	path := writeTemp(t, buildFile(t, map[string]string{"format": "mlx"}, a, b, c))

	f, err := Open(path)
	noErr(t, err)
	defer f.Close()
	eq(t, path, f.Path())
	eq(t, map[string]string{"format": "mlx"}, f.Metadata())
	eq(t, 3, f.Len())

	ts := f.Tensors()
	names := []string{ts[0].Name, ts[1].Name, ts[2].Name}
	eq(t, names, []string{"a.packed", "b.weight", "z.empty"})

	got, ok := f.Tensor("b.weight")
	eq(t, ok, true)
	eq(t, BF16, got.DType)
	eq(t, []int{2, 3}, got.Shape)
	eq(t, a.data, got.Data)
	got, _ = f.Tensor("a.packed")
	eq(t, U32, got.DType)
	eq(t, b.data, got.Data)
	// The data aliases the mapping: its address lies inside f.data.
	if &f.data[int(f.header.DataStart)+12] != &got.Data[0] {
		t.Fatal("tensor data does not alias the mapping")
	}
	got, _ = f.Tensor("z.empty")
	eq(t, len(got.Data), 0)

	_, ok = f.Tensor("missing")
	eq(t, ok, false)
	noErr(t, f.Close())
	noErr(t, f.Close()) // a second Close is a no-op
}

func TestOpenErrorsNameFileAndTensor(t *testing.T) {
	good := buildFile(t, nil, testTensor{"w", F32, []int{2, 2}, seq(16)})
	truncated := writeTemp(t, good[:len(good)-3])
	_, err := Open(truncated)
	errHas(t, err, truncated, `"w"`, "truncated")

	_, err = Open(filepath.Join(t.TempDir(), "absent.safetensors"))
	errHas(t, err, "absent.safetensors")

	short := writeTemp(t, []byte{1, 2, 3})
	_, err = Open(short)
	errHas(t, err, "too short")

	_, err = Open(t.TempDir())
	errHas(t, err, "not a regular file")
}

func TestParseHeaderRejectsHostileInput(t *testing.T) {
	entry := func(dtype string, shape string, begin, end int) string {
		return `{"dtype":"` + dtype + `","shape":` + shape + `,"data_offsets":[` +
			itoa(begin) + `,` + itoa(end) + `]}`
	}
	cases := []struct {
		name, header string
		dataLen      int
		want         string
	}{
		{"not json", `{"w":`, 0, "JSON"},
		{"not object", `[1,2]`, 0, "not a JSON object"},
		{"trailing", `{} {}`, 0, "trailing"},
		{"duplicate", `{"w":` + entry("U8", "[1]", 0, 1) + `,"w":` + entry("U8", "[1]", 1, 2) + `}`, 2, `duplicate key "w"`},
		{"unknown dtype", `{"w":` + entry("Q4", "[1]", 0, 1) + `}`, 1, `tensor "w": unknown dtype "Q4"`},
		{"negative dim", `{"w":` + entry("U8", "[-1]", 0, 1) + `}`, 1, `tensor "w": negative dimension`},
		{"fractional dim", `{"w":` + entry("U8", "[1.5]", 0, 1) + `}`, 1, `tensor "w": bad entry`},
		{"size mismatch", `{"w":` + entry("F32", "[3]", 0, 8) + `}`, 8, `tensor "w": F32 [3] needs 12 bytes`},
		{"overflow", `{"w":` + entry("F32", "[4294967296,4294967296]", 0, 0) + `}`, 0, `tensor "w": shape`},
		{"mul overflow in size", `{"w":` + entry("F64", "[2305843009213693952]", 0, 0) + `}`, 0, `tensor "w": shape`},
		{"out of bounds", `{"w":` + entry("U8", "[4]", 0, 4) + `}`, 3, `tensor "w": data_offsets [0, 4] beyond`},
		{"reversed offsets", `{"w":` + entry("U8", "[0]", 4, 2) + `}`, 4, `tensor "w": bad data_offsets`},
		{"negative offset", `{"w":` + entry("U8", "[1]", -1, 0) + `}`, 4, `tensor "w": bad data_offsets`},
		{"overlap", `{"a":` + entry("U8", "[4]", 0, 4) + `,"b":` + entry("U8", "[2]", 3, 5) + `}`, 5, `overlaps`},
		{"missing field", `{"w":{"dtype":"U8","shape":[1]}}`, 1, `tensor "w": entry needs`},
		{"extra field", `{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1}}`, 1, `tensor "w": bad entry`},
		{"three offsets", `{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}`, 2, `tensor "w": data_offsets must have 2`},
		{"bad metadata", `{"__metadata__":{"a":1}}`, 0, "__metadata__"},
		{"empty name", `{"":` + entry("U8", "[1]", 0, 1) + `}`, 1, "empty tensor name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := assemble([]byte(c.header), make([]byte, c.dataLen))
			_, err := ParseHeader(b, int64(len(b)))
			errHas(t, err, c.want)
		})
	}
}

func TestParseHeaderLengthChecks(t *testing.T) {
	b := assemble([]byte(`{}`), nil)
	h, err := ParseHeader(b, int64(len(b)))
	noErr(t, err)
	eq(t, len(h.Tensors), 0)
	eq(t, h.DataStart, int64(10))

	_, err = ParseHeader(b[:5], 5)
	errHas(t, err, "too short")
	_, err = ParseHeader(b, 9)
	errHas(t, err, "does not fit")
	_, err = ParseHeader(b[:9], int64(len(b)))
	errHas(t, err, "header bytes given")
	huge := binary.LittleEndian.AppendUint64(nil, 1<<62)
	_, err = ParseHeader(huge, 1<<63-1)
	errHas(t, err, "limit")

	padded := assemble([]byte(`{"w":{"dtype":"BF16","shape":[],"data_offsets":[0,2]}}    `), seq(2))
	h, err = ParseHeader(padded, int64(len(padded)))
	noErr(t, err)
	eq(t, []int{}, h.Tensors[0].Shape)
	eq(t, "w BF16[]", (Tensor{Name: "w", DType: BF16, Shape: []int{}}).String())
}

func itoa(i int) string { return strconv.Itoa(i) }

func noErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// eq fails unless got and want are deeply equal.
func eq(t testing.TB, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

// errHas fails unless err is non-nil and its message contains every part.
func errHas(t testing.TB, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not contain %q", err, p)
		}
	}
}
