package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// encodeUnpadded is EncodeHeader in MLX's layout (HeaderOptions.Unpadded): keys sorted, the
// entries' fields sorted (data_offsets, dtype, shape), compact, no padding.
func encodeUnpadded(tensors []TensorSpec, metadata map[string]string) (header []byte, sizes []int64, err error) {
	type entry struct {
		name     string
		spec     TensorSpec
		from, to int64
	}
	sizes, err = tensorSizes(tensors)
	if err != nil {
		return nil, nil, err
	}
	entries := make([]entry, len(tensors))
	var off int64
	for i, t := range tensors {
		entries[i] = entry{t.Name, t, off, off + sizes[i]}
		off += sizes[i]
	}
	sort.Slice(entries, func(a, b int) bool { return entries[a].name < entries[b].name })
	var b bytes.Buffer
	b.WriteByte('{')
	meta := func() error {
		m, err := json.Marshal(metadata) // keys sorted
		if err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(`"__metadata__":`)
		b.Write(m)
		return nil
	}
	wroteMeta := len(metadata) == 0
	for _, e := range entries {
		if !wroteMeta && e.name > "__metadata__" {
			if err := meta(); err != nil {
				return nil, nil, err
			}
			wroteMeta = true
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(e.name) // a string always marshals
		b.Write(name)
		b.WriteString(`:{"data_offsets":[`)
		b.WriteString(strconv.FormatInt(e.from, 10))
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(e.to, 10))
		b.WriteString(`],"dtype":"`)
		b.WriteString(e.spec.DType.String())
		b.WriteString(`","shape":[`)
		for j, d := range e.spec.Shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		b.WriteString("]}")
	}
	if !wroteMeta {
		if err := meta(); err != nil {
			return nil, nil, err
		}
	}
	b.WriteByte('}')
	header = make([]byte, 8, 8+b.Len())
	binary.LittleEndian.PutUint64(header, uint64(b.Len()))
	return append(header, b.Bytes()...), sizes, nil
}
