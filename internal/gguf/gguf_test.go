package gguf

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// sample is a file of every value type and a Q4_0 and an F32 tensor.
func sample(t testing.TB) ([]KV, []Tensor, [][]byte) {
	q, err := QuantizeQ4_0(nil, ramp(64))
	require.NoError(t, err)
	f := AppendF32(nil, []float32{1, -2, 3.5})
	data := [][]byte{q, f}
	kvs := []KV{
		{"general.architecture", "qwen35moe"},
		{"a.u8", uint8(7)}, {"a.i8", int8(-7)}, {"a.u16", uint16(700)}, {"a.i16", int16(-700)},
		{"a.u32", uint32(70000)}, {"a.i32", int32(-70000)}, {"a.u64", uint64(1) << 40}, {"a.i64", int64(-1) << 40},
		{"a.f32", float32(1e-6)}, {"a.f64", 0.25}, {"a.bool", true},
		{"a.strs", []string{"", "<|im_start|>", "héllo"}}, {"a.i32s", []int32{1, -2, 3}}, {"a.f32s", []float32{0.5}},
		{"a.bools", []bool{true, false, true}},
	}
	tensors := []Tensor{
		{Name: "blk.0.ffn_up_exps.weight", Shape: []int64{32, 2}, Type: Q4_0, Data: writeBytes(q)},
		{Name: "output_norm.weight", Shape: []int64{3}, Type: F32, Data: writeBytes(f)},
	}
	return kvs, tensors, data
}

func writeBytes(p []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(p); return err }
}

func ramp(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%13) - 6.5 + float32(i)/100
	}
	return x
}

func TestWriteReadBack(t *testing.T) {
	kvs, tensors, data := sample(t)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, kvs, tensors))
	file := buf.Bytes()
	require.Equal(t, Magic, string(file[:4]))
	require.EqualValues(t, Version, binary.LittleEndian.Uint32(file[4:]))

	info, err := ReadInfo(bytes.NewReader(file))
	require.NoError(t, err)
	require.Equal(t, kvs, info.KVs)
	require.Len(t, info.Tensors, len(tensors))
	require.Zero(t, info.DataOffset%Alignment)
	for i, ti := range info.Tensors {
		require.Equal(t, tensors[i].Name, ti.Name)
		require.Equal(t, tensors[i].Shape, ti.Shape)
		require.Equal(t, tensors[i].Type, ti.Type)
		at := info.DataOffset + ti.Offset
		require.Equal(t, data[i], file[at:at+int64(len(data[i]))], "tensor %s's bytes", ti.Name)
	}
	// The file ends at the last tensor's padded end.
	last := info.Tensors[len(info.Tensors)-1]
	require.EqualValues(t, info.DataOffset+last.Offset+pad(int64(len(data[len(data)-1]))), len(file))
	require.Equal(t, "qwen35moe", info.Value("general.architecture"))
	require.NotNil(t, info.Tensor("output_norm.weight"))
	require.Nil(t, info.Tensor("missing"))
}

func TestWriteRefuses(t *testing.T) {
	kvs, tensors, _ := sample(t)
	cases := map[string]struct {
		kvs     []KV
		tensors []Tensor
		want    string
	}{
		"short data": {kvs, []Tensor{{Name: "x", Shape: []int64{32}, Type: Q4_0, Data: writeBytes(make([]byte, 17))}}, "wrote 17 bytes, want 18"},
		"long data":  {kvs, []Tensor{{Name: "x", Shape: []int64{2}, Type: F32, Data: writeBytes(make([]byte, 12))}}, "wrote 12 bytes, want 8"},
		"key twice":  {append(kvs[:1:1], kvs[0]), tensors, "key general.architecture twice"},
		"bad value":  {[]KV{{"a", struct{}{}}}, tensors, "unsupported value type"},
		"partial block": {kvs, []Tensor{{Name: "x", Shape: []int64{48, 2}, Type: Q4_0, Data: writeBytes(nil)}},
			"not whole q4_0 blocks"},
		"no shape":     {kvs, []Tensor{{Name: "x", Type: F32, Data: writeBytes(nil)}}, "0 dimensions"},
		"long name":    {kvs, []Tensor{{Name: strings.Repeat("n", 64), Shape: []int64{1}, Type: F32, Data: writeBytes(nil)}}, "1 to 63 bytes"},
		"tensor twice": {kvs, append(tensors, tensors[1]), "tensor output_norm.weight twice"},
		"unknown type": {kvs, []Tensor{{Name: "x", Shape: []int64{1}, Type: 99, Data: writeBytes(nil)}}, "unsupported tensor type 99"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := Write(io.Discard, c.kvs, c.tensors)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// TestQ4_0Layout pins the block layout llama.cpp reads: the fp16 scale first, element j in the low
// nibble of byte 2+j and element 16+j in its high nibble, q = x/d + 8 with d = m/−8 for the
// element m of largest magnitude.
func TestQ4_0Layout(t *testing.T) {
	x := make([]float32, 32)
	x[17] = -4 // the largest magnitude: d = 0.5, q = 0
	x[3] = 1   // q = 2 + 8 = 10
	b, err := QuantizeQ4_0(nil, x)
	require.NoError(t, err)
	require.Len(t, b, 18)
	require.EqualValues(t, 0x3800, binary.LittleEndian.Uint16(b)) // fp16 0.5
	require.EqualValues(t, 10|8<<4, b[2+3], "element 3 low, element 19 (zero) high")
	require.EqualValues(t, 8|0<<4, b[2+1], "element 1 (zero) low, element 17 high")
	require.EqualValues(t, 8|8<<4, b[2+0])

	zero, err := QuantizeQ4_0(nil, make([]float32, 32))
	require.NoError(t, err)
	back, err := DequantizeQ4_0(nil, zero)
	require.NoError(t, err)
	require.Equal(t, make([]float32, 32), back)

	_, err = QuantizeQ4_0(nil, make([]float32, 31))
	require.Error(t, err)
	_, err = DequantizeQ4_0(nil, make([]byte, 17))
	require.Error(t, err)
}

// TestQ4_0RoundTrip: every value comes back within half a step (|d|/2, plus the fp16 rounding of
// d over up to 8 steps) — except, past 7 steps on the side opposite the block's largest element,
// within a step (Q4_0 spans −8 to 7 steps) — and the largest element comes back as −8·d.
func TestQ4_0RoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		blocks := rapid.IntRange(1, 4).Draw(t, "blocks")
		scale := rapid.Float32Range(1e-3, 1e3).Draw(t, "scale")
		x := make([]float32, 32*blocks)
		for i := range x {
			x[i] = scale * rapid.Float32Range(-1, 1).Draw(t, "x")
		}
		q, err := QuantizeQ4_0(nil, x)
		require.NoError(t, err)
		require.Len(t, q, 18*blocks)
		y, err := DequantizeQ4_0(nil, q)
		require.NoError(t, err)
		for b := 0; b < blocks; b++ {
			blk := x[32*b : 32*b+32]
			var m float64
			for _, v := range blk {
				if math.Abs(float64(v)) > math.Abs(m) {
					m = float64(v)
				}
			}
			d := math.Abs(m) / 8
			for i := 32 * b; i < 32*b+32; i++ {
				bound := d/2 + 8*d*1e-3 + 1e-12
				if float64(x[i])*m < 0 && math.Abs(float64(x[i])) > 7*d {
					bound = d + 8*d*1e-3 + 1e-12
				}
				err := math.Abs(float64(y[i]) - float64(x[i]))
				require.LessOrEqual(t, err, bound, "element %d: %v → %v (d %v)", i, x[i], y[i], d)
				if float64(x[i]) == m {
					require.InDelta(t, m, float64(y[i]), 8*d*1e-3+1e-12, "the largest element")
				}
			}
		}
	})
}

// FuzzReadInfo: any bytes give a header or an error, never a panic or an unbounded allocation.
func FuzzReadInfo(f *testing.F) {
	kvs, tensors, _ := sample(f)
	var buf bytes.Buffer
	require.NoError(f, Write(&buf, kvs, tensors))
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:40])
	f.Add([]byte("GGUF\x03\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := ReadInfo(bytes.NewReader(b))
		if err != nil {
			return
		}
		if info.DataOffset%Alignment != 0 || info.DataOffset < 24 {
			t.Fatalf("data offset %d", info.DataOffset)
		}
	})
}
