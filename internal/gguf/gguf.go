// Package gguf writes GGUF files (format version 3), the model format of llama.cpp and ggml:
// a header, metadata key/value pairs, a table of tensors (name, shape, element type, offset) and
// the tensors' data, each aligned. lily writes them to compare itself with llama.cpp on the same
// weights (lily gguf); it never reads them to serve.
//
// The layout, all little-endian: the magic "GGUF", the version (uint32 3), the tensor count and
// the key/value count (uint64 each); each key/value as a string key, a uint32 value type and the
// value (strings as a uint64 length and the bytes; arrays as the element type, a uint64 count and
// the elements); each tensor as its name, a uint32 dimension count, that many uint64 extents with
// the contiguous dimension first (ggml's ne[0]), a uint32 ggml type and a uint64 offset into the
// data section; then padding to the alignment and the data section, every tensor starting at a
// multiple of the alignment.
package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Version is the GGUF format version written.
const Version = 3

// Alignment is the alignment of the data section and of every tensor in it: GGUF's default,
// which needs no general.alignment key.
const Alignment = 32

// Magic opens every GGUF file.
const Magic = "GGUF"

// valueType is a metadata value's type code.
type valueType uint32

const (
	typeUint8   valueType = 0
	typeInt8    valueType = 1
	typeUint16  valueType = 2
	typeInt16   valueType = 3
	typeUint32  valueType = 4
	typeInt32   valueType = 5
	typeFloat32 valueType = 6
	typeBool    valueType = 7
	typeString  valueType = 8
	typeArray   valueType = 9
	typeUint64  valueType = 10
	typeInt64   valueType = 11
	typeFloat64 valueType = 12
)

// Type is a tensor's ggml element type.
type Type uint32

// The ggml types lily writes.
const (
	F32  Type = 0
	F16  Type = 1
	Q4_0 Type = 2 // blocks of 32: an fp16 scale d and 16 bytes of 4-bit values, x = d·(q − 8)
	Q8_0 Type = 8 // blocks of 32: an fp16 scale d and 32 int8 values, x = d·q
)

// String names the type as ggml does.
func (t Type) String() string {
	switch t {
	case F32:
		return "f32"
	case F16:
		return "f16"
	case Q4_0:
		return "q4_0"
	case Q8_0:
		return "q8_0"
	}
	return fmt.Sprintf("type%d", uint32(t))
}

// block returns the elements and bytes of one block of t.
func (t Type) block() (elems, bytes int64, err error) {
	switch t {
	case F32:
		return 1, 4, nil
	case F16:
		return 1, 2, nil
	case Q4_0:
		return 32, 18, nil
	case Q8_0:
		return 32, 34, nil
	}
	return 0, 0, fmt.Errorf("gguf: unsupported tensor type %d", uint32(t))
}

// Size returns the bytes of n elements of t; the contiguous extent must be a whole number of
// blocks, which Write checks per tensor.
func (t Type) Size(n int64) (int64, error) {
	e, b, err := t.block()
	if err != nil {
		return 0, err
	}
	if n%e != 0 {
		return 0, fmt.Errorf("gguf: %d elements are not whole %v blocks of %d", n, t, e)
	}
	return n / e * b, nil
}

// KV is one metadata pair. Value is one of uint8, int8, uint16, int16, uint32, int32, uint64,
// int64, float32, float64, bool, string, or a slice of one of those (an array).
type KV struct {
	Key   string
	Value any
}

// Tensor is one tensor's entry and the writer of its data.
type Tensor struct {
	Name  string
	Shape []int64 // ggml order: Shape[0] is the contiguous (innermost) extent
	Type  Type
	// Data writes exactly the tensor's bytes (Type.Size of its elements) to w.
	Data func(w io.Writer) error
}

// elems returns the tensor's element count.
func (t *Tensor) elems() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// check validates the entry and returns its data size.
func (t *Tensor) check() (int64, error) {
	if t.Name == "" || len(t.Name) >= 64 {
		return 0, fmt.Errorf("gguf: tensor name %q: want 1 to 63 bytes (ggml's limit)", t.Name)
	}
	if len(t.Shape) == 0 || len(t.Shape) > 4 {
		return 0, fmt.Errorf("gguf: tensor %s: %d dimensions, want 1 to 4", t.Name, len(t.Shape))
	}
	for _, d := range t.Shape {
		if d <= 0 {
			return 0, fmt.Errorf("gguf: tensor %s: shape %v", t.Name, t.Shape)
		}
	}
	if e, _, err := t.Type.block(); err != nil {
		return 0, fmt.Errorf("gguf: tensor %s: %w", t.Name, err)
	} else if t.Shape[0]%e != 0 {
		return 0, fmt.Errorf("gguf: tensor %s: contiguous extent %d is not whole %v blocks", t.Name, t.Shape[0], t.Type)
	}
	if t.Data == nil {
		return 0, fmt.Errorf("gguf: tensor %s: no data writer", t.Name)
	}
	return t.Type.Size(t.elems())
}

// Write writes a GGUF file of kvs and tensors to w, calling each tensor's Data in order. It
// returns an error, with the tensor's name, if a writer writes other than its size.
func Write(w io.Writer, kvs []KV, tensors []Tensor) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	e := &enc{w: bw}
	e.raw([]byte(Magic))
	e.u32(Version)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	seen := map[string]bool{}
	for _, kv := range kvs {
		if seen[kv.Key] {
			return fmt.Errorf("gguf: key %s twice", kv.Key)
		}
		seen[kv.Key] = true
		e.str(kv.Key)
		if err := e.value(kv.Value); err != nil {
			return fmt.Errorf("gguf: key %s: %w", kv.Key, err)
		}
	}
	sizes := make([]int64, len(tensors))
	names := map[string]bool{}
	var off int64
	for i := range tensors {
		t := &tensors[i]
		n, err := t.check()
		if err != nil {
			return err
		}
		if names[t.Name] {
			return fmt.Errorf("gguf: tensor %s twice", t.Name)
		}
		names[t.Name] = true
		sizes[i] = n
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for _, d := range t.Shape {
			e.u64(uint64(d))
		}
		e.u32(uint32(t.Type))
		e.u64(uint64(off))
		off += pad(n)
	}
	e.zeros(pad(e.n) - e.n)
	if e.err != nil {
		return e.err
	}
	for i := range tensors {
		c := &counter{w: bw}
		if err := tensors[i].Data(c); err != nil {
			return fmt.Errorf("gguf: tensor %s: %w", tensors[i].Name, err)
		}
		if c.n != sizes[i] {
			return fmt.Errorf("gguf: tensor %s: wrote %d bytes, want %d", tensors[i].Name, c.n, sizes[i])
		}
		e.n += c.n
		e.zeros(pad(c.n) - c.n)
		if e.err != nil {
			return e.err
		}
	}
	return bw.Flush()
}

// pad rounds n up to the alignment.
func pad(n int64) int64 { return (n + Alignment - 1) / Alignment * Alignment }

// counter counts the bytes written through it.
type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// enc writes the header's little-endian fields, keeping the first error and the bytes written.
type enc struct {
	w   io.Writer
	n   int64
	err error
	b   [8]byte
}

func (e *enc) raw(p []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(p)
	e.n += int64(n)
	e.err = err
}

func (e *enc) zeros(n int64) {
	var z [Alignment]byte
	e.raw(z[:n])
}

func (e *enc) u32(v uint32) { binary.LittleEndian.PutUint32(e.b[:4], v); e.raw(e.b[:4]) }
func (e *enc) u64(v uint64) { binary.LittleEndian.PutUint64(e.b[:8], v); e.raw(e.b[:8]) }

func (e *enc) str(s string) {
	e.u64(uint64(len(s)))
	e.raw([]byte(s))
}

// value writes v's type code and v.
func (e *enc) value(v any) error {
	t, err := typeOf(v)
	if err != nil {
		return err
	}
	e.u32(uint32(t))
	if t != typeArray {
		e.scalar(v)
		return nil
	}
	return e.array(v)
}

// typeOf returns the GGUF value type of v.
func typeOf(v any) (valueType, error) {
	switch v.(type) {
	case uint8:
		return typeUint8, nil
	case int8:
		return typeInt8, nil
	case uint16:
		return typeUint16, nil
	case int16:
		return typeInt16, nil
	case uint32:
		return typeUint32, nil
	case int32:
		return typeInt32, nil
	case uint64:
		return typeUint64, nil
	case int64:
		return typeInt64, nil
	case float32:
		return typeFloat32, nil
	case float64:
		return typeFloat64, nil
	case bool:
		return typeBool, nil
	case string:
		return typeString, nil
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []uint64, []int64, []float32, []float64, []bool, []string:
		return typeArray, nil
	}
	return 0, fmt.Errorf("unsupported value type %T", v)
}

// scalar writes a non-array value (its type already checked).
func (e *enc) scalar(v any) {
	switch x := v.(type) {
	case uint8:
		e.raw([]byte{x})
	case int8:
		e.raw([]byte{byte(x)})
	case uint16:
		binary.LittleEndian.PutUint16(e.b[:2], x)
		e.raw(e.b[:2])
	case int16:
		binary.LittleEndian.PutUint16(e.b[:2], uint16(x))
		e.raw(e.b[:2])
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float32:
		e.u32(math.Float32bits(x))
	case float64:
		e.u64(math.Float64bits(x))
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		e.raw([]byte{b})
	case string:
		e.str(x)
	}
}

// array writes an array's element type, count and elements.
func (e *enc) array(v any) error {
	switch x := v.(type) {
	case []uint8:
		return arrayOf(e, x)
	case []int8:
		return arrayOf(e, x)
	case []uint16:
		return arrayOf(e, x)
	case []int16:
		return arrayOf(e, x)
	case []uint32:
		return arrayOf(e, x)
	case []int32:
		return arrayOf(e, x)
	case []uint64:
		return arrayOf(e, x)
	case []int64:
		return arrayOf(e, x)
	case []float32:
		return arrayOf(e, x)
	case []float64:
		return arrayOf(e, x)
	case []bool:
		return arrayOf(e, x)
	case []string:
		return arrayOf(e, x)
	}
	return errors.New("not an array")
}

func arrayOf[T any](e *enc, xs []T) error {
	var zero T
	t, err := typeOf(zero)
	if err != nil {
		return err
	}
	e.u32(uint32(t))
	e.u64(uint64(len(xs)))
	for _, x := range xs {
		e.scalar(x)
	}
	return nil
}
