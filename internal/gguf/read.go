package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Info is a GGUF file's header: its metadata and tensor table.
type Info struct {
	KVs     []KV
	Tensors []TensorInfo
	// DataOffset is where the data section starts in the file.
	DataOffset int64
}

// TensorInfo is one tensor table entry.
type TensorInfo struct {
	Name   string
	Shape  []int64
	Type   Type
	Offset int64 // into the data section
}

// Value returns the metadata value of key, or nil.
func (f *Info) Value(key string) any {
	for _, kv := range f.KVs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// Tensor returns the entry named name, or nil.
func (f *Info) Tensor(name string) *TensorInfo {
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			return &f.Tensors[i]
		}
	}
	return nil
}

// Limits on what ReadInfo accepts, so that a corrupt count cannot make it allocate without bound.
const (
	maxEntries   = 1 << 20 // key/value pairs, tensors, array elements
	maxStringLen = 1 << 20
)

// ReadInfo reads the header of a GGUF file (version 2 or 3) from r: everything up to the data
// section, which it does not read. Each tensor's offset is checked to be aligned.
func ReadInfo(r io.Reader) (*Info, error) {
	d := &dec{r: bufio.NewReader(r)}
	var magic [4]byte
	d.full(magic[:])
	if d.err == nil && string(magic[:]) != Magic {
		return nil, fmt.Errorf("gguf: magic %q, want %q", magic[:], Magic)
	}
	ver := d.u32()
	if d.err == nil && ver != 2 && ver != 3 {
		return nil, fmt.Errorf("gguf: version %d, want 2 or 3", ver)
	}
	nt, nkv := d.count("tensors"), d.count("key/value pairs")
	f := &Info{}
	for i := uint64(0); i < nkv && d.err == nil; i++ {
		k := d.str()
		v := d.value(d.u32(), true)
		f.KVs = append(f.KVs, KV{Key: k, Value: v})
	}
	for i := uint64(0); i < nt && d.err == nil; i++ {
		t := TensorInfo{Name: d.str()}
		nd := d.u32()
		if d.err == nil && (nd == 0 || nd > 4) {
			return nil, fmt.Errorf("gguf: tensor %s: %d dimensions", t.Name, nd)
		}
		for j := uint32(0); j < nd && d.err == nil; j++ {
			x := d.u64()
			if x == 0 || x > math.MaxInt32*uint64(1024) {
				d.fail(fmt.Errorf("gguf: tensor %s: extent %d", t.Name, x))
			}
			t.Shape = append(t.Shape, int64(x))
		}
		t.Type = Type(d.u32())
		off := d.u64()
		if d.err == nil && (off%Alignment != 0 || off > math.MaxInt64/2) {
			return nil, fmt.Errorf("gguf: tensor %s: offset %d not aligned to %d", t.Name, off, Alignment)
		}
		t.Offset = int64(off)
		f.Tensors = append(f.Tensors, t)
	}
	if d.err != nil {
		return nil, d.err
	}
	f.DataOffset = pad(d.n)
	return f, nil
}

// dec reads little-endian fields, keeping the first error and the bytes read.
type dec struct {
	r   *bufio.Reader
	n   int64
	err error
	b   [8]byte
}

func (d *dec) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *dec) full(p []byte) {
	if d.err != nil {
		return
	}
	n, err := io.ReadFull(d.r, p)
	d.n += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		d.fail(fmt.Errorf("gguf: header cut short at byte %d: %w", d.n, err))
	}
}

func (d *dec) u8() uint8 { d.full(d.b[:1]); return d.b[0] }
func (d *dec) u16() uint16 {
	d.full(d.b[:2])
	return binary.LittleEndian.Uint16(d.b[:2])
}
func (d *dec) u32() uint32 {
	d.full(d.b[:4])
	return binary.LittleEndian.Uint32(d.b[:4])
}
func (d *dec) u64() uint64 {
	d.full(d.b[:8])
	return binary.LittleEndian.Uint64(d.b[:8])
}

// count reads a uint64 count of what, bounded by maxEntries.
func (d *dec) count(what string) uint64 {
	n := d.u64()
	if n > maxEntries {
		d.fail(fmt.Errorf("gguf: %d %s, more than %d", n, what, maxEntries))
		return 0
	}
	return n
}

func (d *dec) str() string {
	n := d.u64()
	if n > maxStringLen {
		d.fail(fmt.Errorf("gguf: a string of %d bytes", n))
		return ""
	}
	p := make([]byte, n)
	d.full(p)
	return string(p)
}

// value reads a value of type t; arrays (of scalars or strings) only where arrays is set.
func (d *dec) value(t uint32, arrays bool) any {
	if d.err != nil {
		return nil
	}
	switch valueType(t) {
	case typeUint8:
		return d.u8()
	case typeInt8:
		return int8(d.u8())
	case typeUint16:
		return d.u16()
	case typeInt16:
		return int16(d.u16())
	case typeUint32:
		return d.u32()
	case typeInt32:
		return int32(d.u32())
	case typeUint64:
		return d.u64()
	case typeInt64:
		return int64(d.u64())
	case typeFloat32:
		return math.Float32frombits(d.u32())
	case typeFloat64:
		return math.Float64frombits(d.u64())
	case typeBool:
		return d.u8() != 0
	case typeString:
		return d.str()
	case typeArray:
		if arrays {
			return d.array()
		}
	}
	d.fail(fmt.Errorf("gguf: value type %d", t))
	return nil
}

// array reads an array as a slice of its element type.
func (d *dec) array() any {
	et := d.u32()
	n := d.count("array elements")
	switch valueType(et) {
	case typeUint8:
		return readArray[uint8](d, n, et)
	case typeInt8:
		return readArray[int8](d, n, et)
	case typeUint16:
		return readArray[uint16](d, n, et)
	case typeInt16:
		return readArray[int16](d, n, et)
	case typeUint32:
		return readArray[uint32](d, n, et)
	case typeInt32:
		return readArray[int32](d, n, et)
	case typeUint64:
		return readArray[uint64](d, n, et)
	case typeInt64:
		return readArray[int64](d, n, et)
	case typeFloat32:
		return readArray[float32](d, n, et)
	case typeFloat64:
		return readArray[float64](d, n, et)
	case typeBool:
		return readArray[bool](d, n, et)
	case typeString:
		return readArray[string](d, n, et)
	}
	d.fail(fmt.Errorf("gguf: array of value type %d", et))
	return nil
}

// readArray reads n elements of type et (whose values d.value returns as T), growing the slice
// as they arrive (a corrupt count fails at the end of the input, not in an allocation).
func readArray[T any](d *dec, n uint64, et uint32) []T {
	var xs []T
	for i := uint64(0); i < n && d.err == nil; i++ {
		v := d.value(et, false)
		if d.err != nil {
			break
		}
		xs = append(xs, v.(T))
	}
	return xs
}
