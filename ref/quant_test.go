package ref

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/safetensors"
	"pgregory.net/rapid"
)

func TestPackOrder(t *testing.T) {
	// model.md §8: elements [1..8] pack into bytes 21 43 65 87 (lowest bits first, little-endian).
	if got := packWords([]uint8{1, 2, 3, 4, 5, 6, 7, 8}, 4); !bytes.Equal(got, []byte{0x21, 0x43, 0x65, 0x87}) {
		t.Errorf("4-bit pack = % x, want 21 43 65 87", got)
	}
	if got := packWords([]uint8{1, 2, 3, 250}, 8); !bytes.Equal(got, []byte{1, 2, 3, 250}) {
		t.Errorf("8-bit pack = % x, want 01 02 03 fa", got)
	}
}

// handQuantized is a 4-bit matrix [2, 8] with group size 8 written byte by byte:
// row 0 holds q = 1..8 with scale 0.5, bias −1; row 1 holds q = 15,0,... with scale −2, bias 3.
func handQuantized() checkpoint.Matrix {
	bf := func(vs ...float32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint16(b, safetensors.Float32ToBF16(v))
		}
		return b
	}
	return checkpoint.Matrix{Name: "hand", Out: 2, In: 8, Bits: 4, GroupSize: 8, StoredRows: 2,
		W:      checkpoint.Tensor{DType: safetensors.U32, Data: []byte{0x21, 0x43, 0x65, 0x87, 0x0f, 0, 0, 0}},
		Scales: checkpoint.Tensor{DType: safetensors.BF16, Data: bf(0.5, -2)},
		Biases: checkpoint.Tensor{DType: safetensors.BF16, Data: bf(-1, 3)},
	}
}

func TestRowDequantizesByHand(t *testing.T) {
	m := handQuantized()
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	row := make([]float32, 8)
	if err := Row(&m, 0, 0, row); err != nil {
		t.Fatal(err)
	}
	for i, v := range row {
		if want := 0.5*float32(i+1) - 1; v != want {
			t.Errorf("row 0[%d] = %v, want %v", i, v, want)
		}
	}
	if err := Row(&m, 0, 1, row); err != nil {
		t.Fatal(err)
	}
	if want := []float32{-27, 3, 3, 3, 3, 3, 3, 3}; maxAbsDiff(t, row, want) != 0 {
		t.Errorf("row 1 = %v, want %v", row, want)
	}
	// A row window: RowOffset 1 makes logical row 0 the stored row 1.
	m.Out, m.RowOffset = 1, 1
	if err := Row(&m, 0, 0, row); err != nil || row[0] != -27 {
		t.Errorf("windowed row 0 = %v (%v), want the stored row 1", row, err)
	}
	y := make([]float32, 1)
	if err := MatVec(&m, 0, []float32{1, 1, 0, 0, 0, 0, 0, 0}, y); err != nil || y[0] != -24 {
		t.Errorf("windowed matvec = %v (%v), want -24", y, err)
	}
}

func TestMatrixCheckRejectsMisSized(t *testing.T) {
	m := handQuantized()
	m.W.Data = m.W.Data[:4]
	if m.Check() == nil {
		t.Error("truncated packed weight accepted")
	}
	m = handQuantized()
	m.Scales.Data = m.Scales.Data[:2]
	if m.Check() == nil {
		t.Error("truncated scales accepted")
	}
	m = handQuantized()
	m.RowOffset = 1
	if m.Check() == nil {
		t.Error("row window past the stored rows accepted")
	}
	if err := MatVec(&m, 0, make([]float32, 7), make([]float32, 2)); err == nil {
		t.Error("matvec with a short x accepted")
	}
}

// Dequantization error bounds for Quantize (§3.3) with bf16-stored scale s and bias b:
// quantRound is the rounding half step; quantClamp is the worst case at the far edge of a group,
// where q0 = rint(edge/scale) can stretch the range so the opposite extreme rounds past 2^bits − 1 and
// is clamped (up to one full step); quantBF16 bounds the relative error of s and b from their bf16
// rounding (2^-9, doubled for margin), which q multiplies for s.
const (
	quantRound = 0.5
	quantClamp = 1.0
	quantBF16  = 1.0 / 256
)

func TestQuantizeRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		bits := rapid.SampledFrom([]int{4, 8}).Draw(rt, "bits")
		group := rapid.SampledFrom([]int{8, 16, 64}).Draw(rt, "group")
		out := rapid.IntRange(1, 3).Draw(rt, "out")
		in := group * rapid.IntRange(1, 3).Draw(rt, "groups")
		offset := rapid.Float64Range(-2, 2).Draw(rt, "offset")
		spread := rapid.Float64Range(1e-3, 10).Draw(rt, "spread")
		w := make([]float32, out*in)
		for i := range w {
			w[i] = float32(offset + spread*rapid.Float64Range(-1, 1).Draw(rt, "w"))
		}
		m, err := Quantize("q", w, 0, out, in, bits, group)
		if err != nil {
			rt.Fatal(err)
		}
		if err := m.Check(); err != nil {
			rt.Fatal(err)
		}
		row := make([]float32, in)
		nBins := float64(int(1)<<bits - 1)
		for r := 0; r < out; r++ {
			if err := Row(&m, 0, r, row); err != nil {
				rt.Fatal(err)
			}
			for g := 0; g < in/group; g++ {
				s := math.Abs(float64(scalarAt(m.Scales.DType, m.Scales.Data, r*(in/group)+g)))
				b := math.Abs(float64(scalarAt(m.Biases.DType, m.Biases.Data, r*(in/group)+g)))
				for i := g * group; i < (g+1)*group; i++ {
					step := quantRound
					q := math.Round((float64(row[i]) - float64(scalarAt(m.Biases.DType, m.Biases.Data, r*(in/group)+g))) /
						float64(scalarAt(m.Scales.DType, m.Scales.Data, r*(in/group)+g)))
					if q == nBins {
						step = quantClamp
					}
					tol := step*s*(1+quantBF16) + q*s*quantBF16 + b*quantBF16 + 1e-6*spread
					if d := math.Abs(float64(row[i]) - float64(w[r*in+i])); d > tol {
						rt.Fatalf("w[%d,%d] = %g dequantizes to %g (|Δ| %g > %g, scale %g, q %v)", r, i, w[r*in+i], row[i], d, tol, s, q)
					}
				}
			}
		}
	})
}

func TestMatVecParallelMatchesRows(t *testing.T) {
	// Large enough to take the parallel path; every row must equal its serial dot product exactly.
	const out, in = 1024, 512
	b := &builder{t: t, rng: rand.New(rand.NewPCG(9, 9)), force: 4}
	m := b.matrix("big", out, in)
	x := b.values(in, 1)
	y := make([]float32, out)
	if err := MatVec(&m, 0, x, y); err != nil {
		t.Fatal(err)
	}
	row := make([]float32, in)
	for r := 0; r < out; r++ {
		if err := Row(&m, 0, r, row); err != nil {
			t.Fatal(err)
		}
		if want := dot(row, x); y[r] != want {
			t.Fatalf("row %d: %v, want %v", r, y[r], want)
		}
	}
}
