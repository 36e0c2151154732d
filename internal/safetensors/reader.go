package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lily-engine/lily/internal/safefile"
	"io"
	"math"
	"math/bits"
	"sort"
	"strings"
)

// MaxHeaderSize bounds the JSON header a reader accepts (100 MiB, as the reference
// implementation does); the real 4-bit checkpoint's headers are well under 1 MiB.
const MaxHeaderSize = 100 << 20

// Tensor is one tensor of a file: Data aliases the file's mapping (or the buffer given to
// ParseHeader's caller), is exactly numel(Shape)*DType.Size() bytes, little-endian, and must
// not be written to or used after the File is closed.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// TensorInfo is one header entry: where a tensor's bytes lie relative to the start of the data
// section (Begin inclusive, End exclusive).
type TensorInfo struct {
	Name       string
	DType      DType
	Shape      []int
	Begin, End int64
}

// Header is a validated safetensors header.
type Header struct {
	// DataStart is the file offset of the data section: 8 + the JSON header length.
	DataStart int64
	// Tensors are sorted by name.
	Tensors []TensorInfo
	// Metadata is the optional "__metadata__" string map (nil when absent).
	Metadata map[string]string
}

// headerEntry is the JSON form of one tensor; pointers detect missing fields.
type headerEntry struct {
	DType       *string  `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

// ParseHeader validates the header of a safetensors file of fileSize bytes whose first bytes are
// b (b must hold at least the 8-byte length and the JSON header; more is ignored). It treats its
// input as hostile: the header must fit in the file, be one JSON object without duplicate keys,
// name only known dtypes, have non-negative dims whose product times the dtype size equals the
// byte range (without overflow), and cover the data section exactly: contiguous, in offset order.
// Errors name the offending tensor; the caller adds the file name. ParseHeader never panics.
func ParseHeader(b []byte, fileSize int64) (*Header, error) {
	if fileSize < 8 || len(b) < 8 {
		return nil, fmt.Errorf("file too short for a safetensors header (%d bytes)", fileSize)
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("header length %d exceeds the %d-byte limit", n, MaxHeaderSize)
	}
	if int64(n) > fileSize-8 {
		return nil, fmt.Errorf("header length %d does not fit in a %d-byte file (truncated?)", n, fileSize)
	}
	if uint64(len(b)-8) < n {
		return nil, fmt.Errorf("header length %d but only %d header bytes given", n, len(b)-8)
	}
	h := &Header{DataStart: 8 + int64(n)}
	dataSize := fileSize - h.DataStart
	raw := b[8 : 8+n]
	// The format allows trailing spaces as padding.
	raw = bytes.TrimRight(raw, " ")
	entries, err := decodeObject(raw)
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	for _, kv := range entries {
		if kv.key == "__metadata__" {
			if err := json.Unmarshal(kv.val, &h.Metadata); err != nil {
				return nil, fmt.Errorf("header __metadata__ is not a string map: %w", err)
			}
			continue
		}
		ti, err := parseEntry(kv.key, kv.val, dataSize)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", kv.key, err)
		}
		h.Tensors = append(h.Tensors, ti)
	}
	if err := checkContiguous(h.Tensors, h.DataStart, dataSize); err != nil {
		return nil, err
	}
	sort.Slice(h.Tensors, func(i, j int) bool { return h.Tensors[i].Name < h.Tensors[j].Name })
	return h, nil
}

type keyValue struct {
	key string
	val json.RawMessage
}

// decodeObject reads one JSON object, keeping key order and rejecting duplicate keys and
// trailing data.
func decodeObject(raw []byte) ([]keyValue, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	var out []keyValue
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("not valid JSON: object key is not a string")
		}
		if seen[key] {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, fmt.Errorf("not valid JSON: value of %q: %w", key, err)
		}
		out = append(out, keyValue{key, val})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the header object")
	}
	return out, nil
}

// parseEntry validates one tensor entry against a data section of dataSize bytes.
func parseEntry(name string, val json.RawMessage, dataSize int64) (TensorInfo, error) {
	ti := TensorInfo{Name: name}
	if name == "" {
		return ti, errors.New("empty tensor name")
	}
	dec := json.NewDecoder(bytes.NewReader(val))
	dec.DisallowUnknownFields()
	var e headerEntry
	if err := dec.Decode(&e); err != nil {
		return ti, fmt.Errorf("bad entry: %w", err)
	}
	if e.DType == nil || e.Shape == nil || e.DataOffsets == nil {
		return ti, errors.New("entry needs dtype, shape and data_offsets")
	}
	dt, ok := ParseDType(*e.DType)
	if !ok {
		return ti, fmt.Errorf("unknown dtype %q", *e.DType)
	}
	ti.DType = dt
	numel := uint64(1)
	ti.Shape = make([]int, len(*e.Shape))
	for i, d := range *e.Shape {
		if d < 0 {
			return ti, fmt.Errorf("negative dimension %d in shape %v", d, *e.Shape)
		}
		hi, lo := bits.Mul64(numel, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return ti, fmt.Errorf("shape %v overflows", *e.Shape)
		}
		numel = lo
		ti.Shape[i] = int(d)
	}
	hi, size := bits.Mul64(numel, uint64(dt.Size()))
	if hi != 0 || size > math.MaxInt64 {
		return ti, fmt.Errorf("shape %v overflows", *e.Shape)
	}
	off := *e.DataOffsets
	if len(off) != 2 {
		return ti, fmt.Errorf("data_offsets must have 2 entries, has %d", len(off))
	}
	ti.Begin, ti.End = off[0], off[1]
	if ti.Begin < 0 || ti.End < ti.Begin {
		return ti, fmt.Errorf("bad data_offsets [%d, %d]", ti.Begin, ti.End)
	}
	if ti.End > dataSize {
		return ti, fmt.Errorf("data_offsets [%d, %d] beyond the %d-byte data section (truncated file?)",
			ti.Begin, ti.End, dataSize)
	}
	if uint64(ti.End-ti.Begin) != size {
		return ti, fmt.Errorf("%s %v needs %d bytes but data_offsets [%d, %d] hold %d",
			dt, ti.Shape, size, ti.Begin, ti.End, ti.End-ti.Begin)
	}
	return ti, nil
}

// checkContiguous requires what the reference implementation does: the data section is exactly
// the tensors, in the order of their offsets, each beginning where the one before ended, the first
// at 0 and the last ending at the end of the file. Anything else (overlap, a gap, bytes after the
// last tensor, as a header shortened by one byte or a file grown past its tensors leaves) would
// read tensors from the wrong bytes. Errors give the file offset (dataStart + data offset).
func checkContiguous(ts []TensorInfo, dataStart, dataSize int64) error {
	idx := make([]int, len(ts))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := ts[idx[a]], ts[idx[b]]
		return x.Begin < y.Begin || x.Begin == y.Begin && x.End < y.End
	})
	var at int64
	prev := ""
	for _, i := range idx {
		t := ts[i]
		if t.Begin != at {
			what := "leaves a gap after"
			if t.Begin < at {
				what = "overlaps"
			}
			if prev == "" {
				return fmt.Errorf("tensor %q begins at data offset %d (file offset %d), not 0: the data section must start with a tensor",
					t.Name, t.Begin, dataStart+t.Begin)
			}
			return fmt.Errorf("tensor %q at data offset %d (file offset %d) %s tensor %q, which ends at %d: the tensors must be contiguous",
				t.Name, t.Begin, dataStart+t.Begin, what, prev, at)
		}
		at, prev = t.End, t.Name
	}
	if at != dataSize {
		return fmt.Errorf("%d bytes after the last tensor's data (file offset %d of %d): the data section must be exactly the tensors",
			dataSize-at, dataStart+at, dataStart+dataSize)
	}
	return nil
}

// File is an open, memory-mapped safetensors file. Its tensors alias the mapping: they are valid
// until Close. A File is safe for concurrent reads; Close must not race with them.
type File struct {
	path   string
	data   []byte // the whole file, mapped read-only
	header *Header
	byName map[string]int
}

// Open maps the file at path read-only and validates its header (see ParseHeader). Nothing is
// copied: tensor data is read through the mapping.
func Open(path string) (*File, error) {
	fd, st, err := safefile.Open(path) // a FIFO or device is refused before it can block
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fd.Close()
	size := st.Size()
	if size < 8 {
		return nil, fmt.Errorf("safetensors: %s: file too short (%d bytes)", path, size)
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("safetensors: %s: %d bytes do not fit in memory", path, size)
	}
	data, err := mmapFile(fd, int(size))
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: mmap: %w", path, err)
	}
	h, err := ParseHeader(data, size)
	if err != nil {
		_ = munmap(data)
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	f := &File{path: path, data: data, header: h, byName: make(map[string]int, len(h.Tensors))}
	for i, t := range h.Tensors {
		f.byName[t.Name] = i
	}
	return f, nil
}

// Path is the path the file was opened with.
func (f *File) Path() string { return f.path }

// Metadata is the header's "__metadata__" map (nil when absent).
func (f *File) Metadata() map[string]string { return f.header.Metadata }

// Len is the number of tensors in the file.
func (f *File) Len() int { return len(f.header.Tensors) }

// Tensors returns every tensor, sorted by name.
func (f *File) Tensors() []Tensor {
	out := make([]Tensor, len(f.header.Tensors))
	for i := range f.header.Tensors {
		out[i] = f.tensor(i)
	}
	return out
}

// Tensor returns the named tensor; ok is false when the file has none by that name.
func (f *File) Tensor(name string) (t Tensor, ok bool) {
	i, ok := f.byName[name]
	if !ok {
		return Tensor{}, false
	}
	return f.tensor(i), true
}

func (f *File) tensor(i int) Tensor {
	ti := f.header.Tensors[i]
	b, e := f.header.DataStart+ti.Begin, f.header.DataStart+ti.End
	return Tensor{Name: ti.Name, DType: ti.DType, Shape: append([]int(nil), ti.Shape...), Data: f.data[b:e:e]}
}

// Close unmaps the file. Tensors obtained from it must not be used afterwards.
func (f *File) Close() error {
	if f.data == nil {
		return nil
	}
	err := munmap(f.data)
	f.data = nil
	if err != nil {
		return fmt.Errorf("safetensors: %s: munmap: %w", f.path, err)
	}
	return nil
}

// String describes a tensor as "name DTYPE[d0 d1 ...]".
func (t Tensor) String() string {
	dims := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		dims[i] = fmt.Sprint(d)
	}
	return fmt.Sprintf("%s %s[%s]", t.Name, t.DType, strings.Join(dims, " "))
}
