package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testHeaderEntry is one tensor as the header JSON describes it, parsed independently of the writer.
type testHeaderEntry struct {
	DType       string  `json:"dtype"`
	Shape       []int   `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// parseTestFile splits a safetensors file into its raw header JSON, its parsed entries and its data.
func parseTestFile(t *testing.T, path string) (raw []byte, meta map[string]string, entries map[string]testHeaderEntry, data []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(b), 8)
	n := binary.LittleEndian.Uint64(b[:8])
	require.LessOrEqual(t, n, uint64(len(b)-8))
	raw = b[8 : 8+n]
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	entries = map[string]testHeaderEntry{}
	for k, v := range m {
		if k == "__metadata__" {
			require.NoError(t, json.Unmarshal(v, &meta))
			continue
		}
		var e testHeaderEntry
		require.NoError(t, json.Unmarshal(v, &e))
		entries[k] = e
	}
	return raw, meta, entries, b[8+n:]
}

func TestWriterRoundTrip(t *testing.T) {
	specs := []TensorSpec{
		{Name: "a.weight", DType: U32, Shape: []int{2, 3}},
		{Name: "b.odd", DType: BF16, Shape: []int{3}},
		{Name: "c.scalar", DType: F32, Shape: []int{}},
		{Name: "d.empty", DType: BF16, Shape: []int{0, 4}},
		{Name: `e."quoted"`, DType: U8, Shape: []int{5}},
	}
	contents := [][]byte{
		bytes.Repeat([]byte{1}, 24), {2, 2, 3, 3, 4, 4}, {5, 6, 7, 8}, {}, {9, 9, 9, 9, 9},
	}
	path := filepath.Join(t.TempDir(), "x.safetensors")
	w, err := Create(path, specs, map[string]string{"format": "mlx"})
	require.NoError(t, err)
	for i, s := range specs {
		c := contents[i]
		require.NoError(t, w.WriteTensor(s.Name, func(tw io.Writer) error {
			// two writes, to check that the count accumulates
			if _, err := tw.Write(c[:len(c)/2]); err != nil {
				return err
			}
			_, err := tw.Write(c[len(c)/2:])
			return err
		}))
	}
	require.NoError(t, w.Close())

	raw, meta, entries, data := parseTestFile(t, path)
	assert.Equal(t, 0, len(raw)%8, "header length is a multiple of 8")
	trimmed := strings.TrimRight(string(raw), " ")
	assert.True(t, strings.HasSuffix(trimmed, "}"), "padding is spaces after the JSON")
	assert.Less(t, len(raw)-len(trimmed), 8, "at most 7 padding bytes")
	assert.True(t, strings.HasPrefix(string(raw), `{"__metadata__":{"format":"mlx"}`), "metadata comes first")
	assert.Equal(t, map[string]string{"format": "mlx"}, meta)
	require.Len(t, entries, len(specs))
	var off int64
	for i, s := range specs {
		e, ok := entries[s.Name]
		require.True(t, ok, s.Name)
		assert.Equal(t, s.DType.String(), e.DType, s.Name)
		assert.Equal(t, s.Shape, e.Shape, s.Name)
		assert.Equal(t, []int64{off, off + int64(len(contents[i]))}, e.DataOffsets, s.Name)
		assert.Equal(t, contents[i], data[e.DataOffsets[0]:e.DataOffsets[1]], s.Name)
		off += int64(len(contents[i]))
	}
	assert.Equal(t, off, int64(len(data)), "no bytes after the last tensor")
}

func TestWriterNoMetadata(t *testing.T) {
	hdr, sizes, err := EncodeHeader([]TensorSpec{{Name: "x", DType: BF16, Shape: []int{2, 2}}}, nil)
	require.NoError(t, err)
	assert.Equal(t, []int64{8}, sizes)
	n := binary.LittleEndian.Uint64(hdr[:8])
	assert.Equal(t, uint64(len(hdr)-8), n)
	assert.Equal(t, `{"x":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}}`, strings.TrimRight(string(hdr[8:]), " "))
}

func TestWriterRejectsBadDeclarations(t *testing.T) {
	cases := map[string][]TensorSpec{
		"duplicate":      {{Name: "x", DType: BF16, Shape: []int{1}}, {Name: "x", DType: BF16, Shape: []int{1}}},
		"empty name":     {{Name: "", DType: BF16, Shape: []int{1}}},
		"metadata name":  {{Name: "__metadata__", DType: BF16, Shape: []int{1}}},
		"invalid dtype":  {{Name: "x", DType: Invalid, Shape: []int{1}}},
		"negative dim":   {{Name: "x", DType: BF16, Shape: []int{-1}}},
		"overflow shape": {{Name: "x", DType: F64, Shape: []int{1 << 40, 1 << 30}}},
	}
	for name, specs := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.safetensors")
			_, err := Create(path, specs, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
		})
	}
}

func newTwoTensorWriter(t *testing.T) (*Writer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.safetensors")
	w, err := Create(path, []TensorSpec{
		{Name: "first", DType: BF16, Shape: []int{4}},
		{Name: "second", DType: U32, Shape: []int{1}},
	}, nil)
	require.NoError(t, err)
	return w, path
}

func writeN(n int) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(make([]byte, n))
		return err
	}
}

func TestWriterTooMuchData(t *testing.T) {
	w, path := newTwoTensorWriter(t)
	err := w.WriteTensor("first", writeN(9))
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrTooMuchData))
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), `"first"`)
	assert.Error(t, w.WriteTensor("second", writeN(4)), "errors are sticky")
	assert.Error(t, w.Close())
}

func TestWriterTooLittleData(t *testing.T) {
	w, path := newTwoTensorWriter(t)
	err := w.WriteTensor("first", writeN(7))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "wrote 7 of 8 bytes")
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), `"first"`)
}

func TestWriterOutOfOrder(t *testing.T) {
	w, _ := newTwoTensorWriter(t)
	err := w.WriteTensor("second", writeN(4))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `next declared tensor is "first"`)
}

func TestWriterFillError(t *testing.T) {
	w, _ := newTwoTensorWriter(t)
	boom := errors.New("boom")
	err := w.WriteTensor("first", func(io.Writer) error { return boom })
	assert.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), `"first"`)
}

func TestWriterExtraTensorAndEarlyClose(t *testing.T) {
	w, _ := newTwoTensorWriter(t)
	require.NoError(t, w.WriteTensor("first", writeN(8)))
	err := w.Close()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `next "second"`)

	w, _ = newTwoTensorWriter(t)
	require.NoError(t, w.WriteTensor("first", writeN(8)))
	require.NoError(t, w.WriteTensor("second", writeN(4)))
	assert.Error(t, w.WriteTensor("third", writeN(1)))
}

func TestWriterCreateFailsOnMissingDir(t *testing.T) {
	_, err := Create(filepath.Join(t.TempDir(), "no", "such", "x.safetensors"),
		[]TensorSpec{{Name: "x", DType: BF16, Shape: []int{1}}}, nil)
	assert.Error(t, err)
}
