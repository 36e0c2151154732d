package safetensors

import (
	"os"
	"testing"
)

// TestDataSectionExact: as in the reference implementation, the data section must be exactly the
// tensors, contiguous and in order; errors name the file offset.
func TestDataSectionExact(t *testing.T) {
	entry := func(shape string, begin, end int) string {
		return `{"dtype":"U8","shape":` + shape + `,"data_offsets":[` + itoa(begin) + `,` + itoa(end) + `]}`
	}
	for _, c := range []struct {
		name, header string
		dataLen      int
		want         string
	}{
		{"bytes after the last", `{"a":` + entry("[4]", 0, 4) + `}`, 5, "1 bytes after the last tensor"},
		{"gap", `{"a":` + entry("[2]", 0, 2) + `,"b":` + entry("[2]", 3, 5) + `}`, 5, `tensor "b" at data offset 3`},
		{"not from 0", `{"a":` + entry("[2]", 1, 3) + `}`, 3, `begins at data offset 1`},
		{"empty file data", `{"a":` + entry("[0]", 0, 0) + `}`, 2, "2 bytes after"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := assemble([]byte(c.header), make([]byte, c.dataLen))
			_, err := ParseHeader(b, int64(len(b)))
			errHas(t, err, c.want, "file offset")
		})
	}
	// Out of order in the header but contiguous by offset, and empty tensors anywhere: accepted.
	ok := `{"b":` + entry("[2]", 2, 4) + `,"a":` + entry("[2]", 0, 2) + `,"z":` + entry("[0]", 4, 4) + `,"y":` + entry("[0]", 0, 0) + `}`
	b := assemble([]byte(ok), make([]byte, 4))
	_, err := ParseHeader(b, int64(len(b)))
	noErr(t, err)
}

// TestHeaderShortenedByOne: a header length one byte short leaves a data section one byte longer
// than its tensors (every tensor would read shifted); Open refuses it.
func TestHeaderShortenedByOne(t *testing.T) {
	good := buildFile(t, nil, testTensor{"a", F32, []int{2}, seq(8)}, testTensor{"b", U8, []int{3}, seq(3)})
	hdrLen := int(good[0]) | int(good[1])<<8
	padded := assemble(append(append([]byte(nil), good[8:8+hdrLen]...), ' '), good[8+hdrLen:]) // padding, as writers add
	f, err := Open(writeTemp(t, padded))
	noErr(t, err)
	noErr(t, f.Close())
	padded[0]-- // the header ends one byte early: its padding becomes data
	_, err = Open(writeTemp(t, padded))
	errHas(t, err, "model.safetensors", "1 bytes after the last tensor")
}

// TestShardExtended: a shard grown past its tensors (a sparse GiB appended) is refused, not loaded.
func TestShardExtended(t *testing.T) {
	p := writeTemp(t, buildFile(t, nil, testTensor{"a", F32, []int{2}, seq(8)}))
	st, err := os.Stat(p)
	noErr(t, err)
	if err := os.Truncate(p, st.Size()+1<<30); err != nil {
		t.Skipf("this filesystem cannot grow a sparse file: %v", err)
	}
	_, err = Open(p)
	errHas(t, err, "model.safetensors", "1073741824 bytes after the last tensor")
}
