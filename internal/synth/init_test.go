package synth

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBF16(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80}, {-2, 0xc000}, {0, 0}, {float32(math.Inf(1)), 0x7f80},
		{math.Float32frombits(0x3f808000), 0x3f80}, // halfway, even below: stays
		{math.Float32frombits(0x3f818000), 0x3f82}, // halfway, odd below: rounds up
		{math.Float32frombits(0x3f808001), 0x3f81}, // just above halfway
	}
	for _, c := range cases {
		assert.Equal(t, c.want, bf16(c.in), "%g", c.in)
	}
	nan := bf16(float32(math.NaN()))
	assert.True(t, math.IsNaN(float64(bf16ToFloat(nan))))
}

// bf16ToFloat widens a bfloat16 to float32.
func bf16ToFloat(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// allInits are one Init of every kind, with the element size of its dtype.
var allInits = []struct {
	in   Init
	size int
}{
	{Init{Kind: InitPacked}, 4},
	{Init{Kind: InitUniform, Lo: -1, Hi: 1}, 2},
	{Init{Kind: InitLogUniform, Lo: 1, Hi: 16}, 2},
	{Init{Kind: InitScales, Std: 0.1, Bits: 4}, 2},
	{Init{Kind: InitBiases, Std: 0.1, Bits: 8}, 2},
}

// TestFillRangesIndependent checks that generating a tensor piecewise, at any element-aligned
// split, gives the same bytes as generating it at once (what parallel chunks rely on).
func TestFillRangesIndependent(t *testing.T) {
	for _, c := range allInits {
		f, err := newFiller(c.in, "t", 5)
		require.NoError(t, err)
		whole := make([]byte, 1000*c.size)
		f(whole, 0)
		pieces := make([]byte, len(whole))
		for off, step := 0, c.size; off < len(pieces); off, step = off+step, step+c.size {
			end := min(off+step, len(pieces))
			f(pieces[off:end], int64(off))
		}
		assert.Equal(t, whole, pieces, "kind %d", c.in.Kind)
	}
}

func TestStreamerChunksInOrder(t *testing.T) {
	f, err := newFiller(Init{Kind: InitPacked}, "big", 9)
	require.NoError(t, err)
	size := int64(2*chunkBytes + chunkBytes/2 + 12)
	want := make([]byte, size)
	f(want, 0)
	for _, buffers := range []int{1, 3, 6} {
		var got bytes.Buffer
		require.NoError(t, newStreamer(buffers).stream(context.Background(), &got, size, f))
		assert.True(t, bytes.Equal(want, got.Bytes()), "%d buffers", buffers)
	}
}

type failAfter struct{ n int }

func (w *failAfter) Write(p []byte) (int, error) {
	if w.n == 0 {
		return 0, errors.New("disk full")
	}
	w.n--
	return len(p), nil
}

func TestStreamerErrors(t *testing.T) {
	f, err := newFiller(Init{Kind: InitPacked}, "big", 9)
	require.NoError(t, err)
	s := newStreamer(3)
	err = s.stream(context.Background(), &failAfter{n: 1}, 5*chunkBytes, f)
	assert.ErrorContains(t, err, "disk full")
	assert.Len(t, s.free, 3, "every buffer is returned after an error")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = s.stream(ctx, &bytes.Buffer{}, 5*chunkBytes, f)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Len(t, s.free, 3)
}

func TestNewFillerRejects(t *testing.T) {
	_, err := newFiller(Init{Kind: InitScales, Std: 0.1, Bits: 0}, "x", 0)
	assert.ErrorContains(t, err, "bits")
	_, err = newFiller(Init{Kind: InitBiases, Std: 0, Bits: 4}, "x", 0)
	assert.ErrorContains(t, err, "std")
	_, err = newFiller(Init{Kind: 99}, "x", 0)
	assert.ErrorContains(t, err, "unknown init kind")
}

func bf16Values(b []byte) []float64 {
	v := make([]float64, len(b)/2)
	for i := range v {
		v[i] = float64(bf16ToFloat(binary.LittleEndian.Uint16(b[2*i:])))
	}
	return v
}

func meanStd(v []float64) (mean, std float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)))
}

// dequantize expands an affine-quantized matrix (model.md §3): w = scale*q + bias, q unsigned,
// lowest bits first.
func dequantize(packed, scales, biases []byte, bits, groupSize int) []float64 {
	s, b := bf16Values(scales), bf16Values(biases)
	per := 32 / bits
	mask := uint32(1)<<bits - 1
	out := make([]float64, len(packed)/4*per)
	for i := range out {
		word := binary.LittleEndian.Uint32(packed[4*(i/per):])
		q := float64(word >> (bits * (i % per)) & mask)
		g := i / groupSize
		out[i] = s[g]*q + b[g]
	}
	return out
}

// Statistical tolerances for the value checks on the tiny checkpoint.
const (
	stdRelTol  = 0.12 // smallest matrices have ~2k elements: a few percent sampling error, plus jitter
	meanStdTol = 0.1  // |mean| / std
	rangeSlack = 1.01 // bf16 rounding of a bound
)

// TestWrittenValues checks the values of every tensor of the tiny checkpoint in both layouts: matrices
// centred with std 1/sqrt(in), quantized groups centred, norms near 0 (HF) or 1 (MLX), A_log in
// [0, log 16], everything finite.
func TestWrittenValues(t *testing.T) {
	for _, l := range []Layout{LayoutHF, LayoutMLX} {
		p, dir := writeTiny(t, l, 0, Options{Seed: 11})
		data := checkCheckpoint(t, p, dir)
		byName := tensorsByName(t, p)
		checked := 0
		for name, x := range byName {
			in := x.Shape[len(x.Shape)-1]
			var vals []float64
			switch {
			case strings.HasSuffix(name, ".scales") || strings.HasSuffix(name, ".biases"):
				continue // checked with their weight
			case x.Init.Kind == InitPacked:
				m := strings.TrimSuffix(name, ".weight")
				sc := byName[m+".scales"]
				bits := 32 * in / (sc.Shape[len(sc.Shape)-1] * 64)
				in = in * 32 / bits
				vals = dequantize(data[name], data[m+".scales"], data[m+".biases"], bits, 64)
				checkGroupsCentred(t, name, bf16Values(data[m+".scales"]), bf16Values(data[m+".biases"]), bits)
			default:
				vals = bf16Values(data[name])
			}
			for _, v := range vals {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("%s: non-finite value %g", name, v)
				}
			}
			mean, std := meanStd(vals)
			switch {
			case strings.HasSuffix(name, "A_log"):
				assertRange(t, name, vals, 0, math.Log(16))
			case strings.HasSuffix(name, "dt_bias"):
				assertRange(t, name, vals, -dtBiasSpread, dtBiasSpread)
			case strings.HasSuffix(name, "linear_attn.norm.weight") || (l == LayoutMLX && strings.Contains(name, "norm.weight")):
				assertRange(t, name, vals, 1-normSpread, 1+normSpread)
			case strings.Contains(name, "norm.weight"):
				assertRange(t, name, vals, -normSpread, normSpread)
			default: // a matrix, the conv included
				if strings.Contains(name, "conv1d") {
					in = 4
				}
				want := 1 / math.Sqrt(float64(in))
				if len(vals) >= 1000 {
					assert.InEpsilon(t, want, std, stdRelTol, "%s std", name)
					assert.Less(t, math.Abs(mean), meanStdTol*want, "%s mean", name)
				}
			}
			checked++
		}
		assert.Greater(t, checked, 50, "%v", l)
	}
}

func assertRange(t *testing.T, name string, v []float64, lo, hi float64) {
	t.Helper()
	slack := (hi - lo) * (rangeSlack - 1)
	for _, x := range v {
		if x < lo-slack || x > hi+slack {
			t.Errorf("%s: value %g outside [%g, %g]", name, x, lo, hi)
			return
		}
	}
	_, std := meanStd(v)
	assert.Positive(t, std, "%s is not constant", name)
}

// checkGroupsCentred checks that each group's dequantized range [bias, bias + scale*(2^bits-1)] is
// centred on zero, and that both signs of scale occur.
func checkGroupsCentred(t *testing.T, name string, scales, biases []float64, bits int) {
	t.Helper()
	n := float64(int(1)<<bits - 1)
	neg := 0
	for g := range scales {
		lo, hi := biases[g], biases[g]+scales[g]*n
		if math.Abs(lo+hi) > 0.02*math.Abs(hi-lo) || scales[g] == 0 {
			t.Errorf("%s group %d: range [%g, %g] is not centred", name, g, lo, hi)
			return
		}
		if scales[g] < 0 {
			neg++
		}
	}
	if len(scales) >= 16 {
		assert.True(t, neg > 0 && neg < len(scales), "%s: scale signs vary (%d of %d negative)", name, neg, len(scales))
	}
}

// BenchmarkStreamPacked measures generation alone (no disk): the bytes/s Write can feed a file.
func BenchmarkStreamPacked(b *testing.B) {
	f, err := newFiller(Init{Kind: InitPacked}, "bench", 1)
	require.NoError(b, err)
	s := newStreamer(4)
	const size = 16 * chunkBytes
	b.SetBytes(size)
	for b.Loop() {
		if err := s.stream(context.Background(), io.Discard, size, f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFillScales measures the per-group scale generation, 1/16 of a 4-bit checkpoint's bytes.
func BenchmarkFillScales(b *testing.B) {
	f, err := newFiller(Init{Kind: InitScales, Std: 0.02, Bits: 4}, "bench", 1)
	require.NoError(b, err)
	buf := make([]byte, chunkBytes)
	b.SetBytes(chunkBytes)
	for b.Loop() {
		f(buf, 0)
	}
}
