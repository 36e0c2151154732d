package safetensors

import (
	"encoding/binary"
	"sort"
	"testing"
)

// FuzzParseHeader feeds arbitrary bytes to ParseHeader: it must never panic, and whatever it
// accepts must describe in-bounds, correctly sized, non-overlapping tensors.
func FuzzParseHeader(f *testing.F) {
	seeds := []string{
		`{}`,
		`{"__metadata__":{"format":"pt"}}`,
		`{"w":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}}`,
		`{"a":{"dtype":"U32","shape":[1,2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[0],"data_offsets":[8,8]}}`,
		`{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`,
		`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{}}`,
		`{"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},"b":{"dtype":"I64","shape":[1],"data_offsets":[4,12]}}`,
	}
	for _, s := range seeds {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(s)))
		b = append(b, s...)
		b = append(b, make([]byte, 16)...)
		f.Add(b)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{', '}'})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b, int64(len(b)))
		if err != nil {
			return
		}
		data := int64(len(b)) - h.DataStart
		var spans [][2]int64
		for _, ti := range h.Tensors {
			n := int64(ti.DType.Size())
			for _, d := range ti.Shape {
				n *= int64(d)
			}
			if ti.Begin < 0 || ti.End > data || ti.End-ti.Begin != n {
				t.Fatalf("accepted bad tensor %+v (data %d)", ti, data)
			}
			if n > 0 {
				spans = append(spans, [2]int64{ti.Begin, ti.End})
			}
		}
		sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
		for i := 1; i < len(spans); i++ {
			if spans[i][0] < spans[i-1][1] {
				t.Fatalf("accepted overlapping ranges %v", spans)
			}
		}
		if h.DataStart < 8 || h.DataStart > int64(len(b)) {
			t.Fatalf("bad DataStart %d", h.DataStart)
		}
	})
}
