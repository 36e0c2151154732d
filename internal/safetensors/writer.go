package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// TensorSpec declares one tensor to be written: its name, element type and shape.
type TensorSpec struct {
	Name  string
	DType DType
	Shape []int
}

// Bytes is the size of the tensor's data: the product of Shape times DType.Size(). It is -1 when
// the spec is invalid (unknown dtype, negative dimension, or a size that overflows int64).
func (s TensorSpec) Bytes() int64 {
	size := int64(s.DType.Size())
	if size == 0 {
		return -1
	}
	for _, d := range s.Shape {
		if d < 0 {
			return -1
		}
		if d != 0 && size > math.MaxInt64/int64(d) {
			return -1
		}
		size *= int64(d)
	}
	return size
}

// writeBufSize is the buffer between tensor writers and the file; large writes bypass it.
const writeBufSize = 1 << 20

// Writer streams one safetensors file: the header, built from tensors declared up front, then each
// tensor's data in declaration order. It checks that every tensor receives exactly its declared
// number of bytes. A Writer is owned by one goroutine.
type Writer struct {
	name  string // file name, for errors
	f     *os.File
	bw    *bufio.Writer
	specs []TensorSpec
	sizes []int64
	next  int   // index of the next tensor to write
	err   error // sticky error; once set every call returns it
}

// Create creates (or truncates) the file at path, writes its header for the given tensors and
// metadata (the "__metadata__" string map; nil for none), and returns a Writer for the data.
// The data of the tensors follows in the order given.
func Create(path string, tensors []TensorSpec, metadata map[string]string) (*Writer, error) {
	return CreateWith(path, tensors, metadata, HeaderOptions{})
}

// HeaderOptions choose how a header is laid out.
type HeaderOptions struct {
	// Unpadded writes the header as MLX's save_safetensors does: the JSON object with its keys in
	// sorted order (nlohmann::json's std::map), "__metadata__" included, and no padding, so the
	// data starts at whatever offset the header ends at (often not a multiple of 4). The data
	// offsets still follow the order the tensors are given in.
	Unpadded bool
}

// CreateWith is Create with header options.
func CreateWith(path string, tensors []TensorSpec, metadata map[string]string, o HeaderOptions) (*Writer, error) {
	hdr, sizes, err := EncodeHeaderWith(tensors, metadata, o)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	w := &Writer{name: path, f: f, bw: bufio.NewWriterSize(f, writeBufSize), specs: tensors, sizes: sizes}
	if _, err := w.bw.Write(hdr); err != nil {
		f.Close()
		return nil, fmt.Errorf("safetensors: %s: writing header: %w", path, err)
	}
	return w, nil
}

// EncodeHeader returns the bytes that precede the data of a safetensors file holding tensors (in
// this order) and metadata: the 8-byte little-endian header length and the JSON header, padded with
// spaces to a multiple of 8 bytes as the reference library does. It also returns each tensor's
// data size. Names must be unique, non-empty and not "__metadata__"; dtypes must be valid.
func EncodeHeader(tensors []TensorSpec, metadata map[string]string) (header []byte, sizes []int64, err error) {
	return EncodeHeaderWith(tensors, metadata, HeaderOptions{})
}

// EncodeHeaderWith is EncodeHeader with header options.
func EncodeHeaderWith(tensors []TensorSpec, metadata map[string]string, o HeaderOptions) (header []byte, sizes []int64, err error) {
	if o.Unpadded {
		return encodeUnpadded(tensors, metadata)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	if len(metadata) > 0 {
		m, err := json.Marshal(metadata) // keys sorted: deterministic
		if err != nil {
			return nil, nil, fmt.Errorf("metadata: %w", err)
		}
		b.WriteString(`"__metadata__":`)
		b.Write(m)
	}
	sizes, err = tensorSizes(tensors)
	if err != nil {
		return nil, nil, err
	}
	var off int64
	for i, t := range tensors {
		n := sizes[i]
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(t.Name) // a string always marshals
		b.Write(name)
		b.WriteString(`:{"dtype":"`)
		b.WriteString(t.DType.String())
		b.WriteString(`","shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		b.WriteString(`],"data_offsets":[`)
		b.WriteString(strconv.FormatInt(off, 10))
		b.WriteByte(',')
		off += n
		b.WriteString(strconv.FormatInt(off, 10))
		b.WriteString("]}")
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	header = make([]byte, 8, 8+b.Len())
	binary.LittleEndian.PutUint64(header, uint64(b.Len()))
	return append(header, b.Bytes()...), sizes, nil
}

// tensorSizes checks a header's tensor list — names non-empty, not "__metadata__" and unique;
// dtypes and shapes valid; the total size within int64 — and returns each tensor's data size.
func tensorSizes(tensors []TensorSpec) ([]int64, error) {
	seen := make(map[string]bool, len(tensors))
	sizes := make([]int64, len(tensors))
	var off int64
	for i, t := range tensors {
		if t.Name == "" || t.Name == "__metadata__" {
			return nil, fmt.Errorf("tensor %d: invalid name %q", i, t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("tensor %q declared twice", t.Name)
		}
		seen[t.Name] = true
		n := t.Bytes()
		if n < 0 {
			return nil, fmt.Errorf("tensor %q: invalid dtype %v or shape %v", t.Name, t.DType, t.Shape)
		}
		if off > math.MaxInt64-n {
			return nil, fmt.Errorf("tensor %q: data size overflows", t.Name)
		}
		sizes[i] = n
		off += n
	}
	return sizes, nil
}

// WriteTensor streams the data of the next declared tensor, which must be called name: fill is
// called once with a writer that accepts exactly the tensor's declared byte count. Writing more, or
// returning having written less, is an error naming the file and tensor.
func (w *Writer) WriteTensor(name string, fill func(io.Writer) error) error {
	if w.err != nil {
		return w.err
	}
	if w.next >= len(w.specs) {
		return w.fail(fmt.Errorf("tensor %q: all %d declared tensors already written", name, len(w.specs)))
	}
	want := w.specs[w.next].Name
	if name != want {
		return w.fail(fmt.Errorf("tensor %q written out of order: next declared tensor is %q", name, want))
	}
	tw := &limitedTensorWriter{w: w.bw, left: w.sizes[w.next]}
	if err := fill(tw); err != nil {
		return w.fail(fmt.Errorf("tensor %q: %w", name, err))
	}
	if tw.left != 0 {
		return w.fail(fmt.Errorf("tensor %q: wrote %d of %d bytes", name, w.sizes[w.next]-tw.left, w.sizes[w.next]))
	}
	w.next++
	return nil
}

// Close flushes and closes the file. It fails if any declared tensor was not written, or if an
// earlier call failed; the file is closed in every case.
func (w *Writer) Close() error {
	if w.f == nil {
		return w.err
	}
	err := w.err
	if err == nil && w.next < len(w.specs) {
		err = fmt.Errorf("safetensors: %s: closed after %d of %d tensors (next %q)",
			w.name, w.next, len(w.specs), w.specs[w.next].Name)
	}
	if err == nil {
		if ferr := w.bw.Flush(); ferr != nil {
			err = fmt.Errorf("safetensors: %s: %w", w.name, ferr)
		}
	}
	if cerr := w.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("safetensors: %s: %w", w.name, cerr)
	}
	w.f = nil
	w.err = err
	if w.err == nil {
		w.err = errWriterClosed
	}
	return err
}

var errWriterClosed = errors.New("safetensors: writer closed")

func (w *Writer) fail(err error) error {
	w.err = fmt.Errorf("safetensors: %s: %w", w.name, err)
	return w.err
}

// ErrTooMuchData is returned by a tensor's writer when more bytes are written than declared.
var ErrTooMuchData = errors.New("more data than the declared shape holds")

// limitedTensorWriter passes at most left bytes through to w.
type limitedTensorWriter struct {
	w    io.Writer
	left int64
}

func (t *limitedTensorWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > t.left {
		n, err := t.w.Write(p[:t.left])
		t.left -= int64(n)
		if err != nil {
			return n, err
		}
		return n, ErrTooMuchData
	}
	n, err := t.w.Write(p)
	t.left -= int64(n)
	return n, err
}
