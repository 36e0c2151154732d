package safetensors

import (
	"bytes"
	"encoding/binary"
	"io"
	"path/filepath"
	"testing"
)

// TestUnpaddedHeaderMLXLayout checks the header MLX's save_safetensors writes: compact JSON, keys
// and fields sorted, the metadata among the keys in sort order, data offsets in write order, and
// no padding, so the data starts right after the JSON; and that such a file reads back.
func TestUnpaddedHeaderMLXLayout(t *testing.T) {
	specs := []TensorSpec{
		{Name: "z.first", DType: U32, Shape: []int{2}},
		{Name: "A.second", DType: BF16, Shape: []int{3}},
		{Name: "m.third", DType: F32, Shape: []int{1}},
	}
	contents := [][]byte{{1, 2, 3, 4, 5, 6, 7, 8}, {9, 8, 7, 6, 5, 4}, {1, 1, 1, 1}}
	hdr, sizes, err := EncodeHeaderWith(specs, map[string]string{"format": "mlx"}, HeaderOptions{Unpadded: true})
	if err != nil {
		t.Fatal(err)
	}
	// "A…" sorts before "__metadata__" ('A' < '_'), "m…" and "z…" after it.
	want := `{"A.second":{"data_offsets":[8,14],"dtype":"BF16","shape":[3]},"__metadata__":{"format":"mlx"},` +
		`"m.third":{"data_offsets":[14,18],"dtype":"F32","shape":[1]},"z.first":{"data_offsets":[0,8],"dtype":"U32","shape":[2]}}`
	if n := binary.LittleEndian.Uint64(hdr); n != uint64(len(want)) || string(hdr[8:]) != want {
		t.Fatalf("header (%d bytes):\n%s\nwant (%d bytes):\n%s", n, hdr[8:], len(want), want)
	}
	if sizes[0] != 8 || sizes[1] != 6 || sizes[2] != 4 {
		t.Fatalf("sizes %v", sizes)
	}

	path := filepath.Join(t.TempDir(), "x.safetensors")
	w, err := CreateWith(path, specs, map[string]string{"format": "mlx"}, HeaderOptions{Unpadded: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range specs {
		if err := w.WriteTensor(s.Name, func(tw io.Writer) error { _, err := tw.Write(contents[i]); return err }); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if start := f.header.DataStart; start != int64(8+len(want)) || start%4 == 0 {
		t.Fatalf("data starts at %d, want %d (not 4-byte aligned)", start, 8+len(want))
	}
	for i, s := range specs {
		got, ok := f.Tensor(s.Name)
		if !ok || !bytes.Equal(got.Data, contents[i]) {
			t.Fatalf("%s: %v %v, want %v", s.Name, ok, got.Data, contents[i])
		}
	}
}
