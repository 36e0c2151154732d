package ref

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/safetensors"
)

// Row writes logical row r of expert e of m, dequantized to float32, into dst: [In].
// Quantized: w[i] = float32(scale)·float32(q[i]) + float32(bias) (model.md §3.2), one float32
// rounding after the product and one after the sum. e must be 0 for a plain matrix.
func Row(m *checkpoint.Matrix, e, r int, dst []float32) error {
	if e < 0 || e >= max(m.Experts, 1) || r < 0 || r >= m.Out || len(dst) != m.In {
		return fmt.Errorf("matrix %s: row %d of expert %d into %d values (shape experts=%d [%d, %d])",
			m.Name, r, e, len(dst), m.Experts, m.Out, m.In)
	}
	sr := e*m.StoredRows + m.RowOffset + r // stored row
	if m.Bits == 0 {
		size := m.W.DType.Size()
		decode(m.W.DType, m.W.Data[sr*m.In*size:(sr+1)*m.In*size], dst)
		return nil
	}
	groups := m.In / m.GroupSize
	words := m.W.Data[sr*m.In*m.Bits/8 : (sr+1)*m.In*m.Bits/8]
	mask := uint32(1)<<m.Bits - 1
	per := 32 / m.Bits
	for g := 0; g < groups; g++ {
		scale := scalarAt(m.Scales.DType, m.Scales.Data, sr*groups+g)
		bias := scalarAt(m.Biases.DType, m.Biases.Data, sr*groups+g)
		for i := g * m.GroupSize; i < (g+1)*m.GroupSize; i += per {
			word := binary.LittleEndian.Uint32(words[4*(i/per):])
			for k := 0; k < per; k++ {
				q := float32((word >> (m.Bits * k)) & mask)
				dst[i+k] = float32(scale*q) + bias
			}
		}
	}
	return nil
}

// decode widens a little-endian BF16, F16 or F32 buffer into dst.
func decode(dt checkpoint.DType, b []byte, dst []float32) {
	switch dt {
	case safetensors.BF16:
		for i := range dst {
			dst[i] = safetensors.BF16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case safetensors.F16:
		for i := range dst {
			dst[i] = safetensors.F16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	default:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
}

// scalarAt reads element i of a little-endian BF16, F16 or F32 buffer as float32.
func scalarAt(dt checkpoint.DType, b []byte, i int) float32 {
	switch dt {
	case safetensors.BF16:
		return safetensors.BF16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
	case safetensors.F16:
		return safetensors.F16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
	default:
		return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

// parallelMin is the matrix size (Out·In) from which MatVec splits its rows over GOMAXPROCS
// goroutines. Every row's sum is computed the same way either way, so results do not depend on it.
const parallelMin = 1 << 18

// MatVec computes y = W_e x for expert e (0 for a plain matrix), one dequantized row at a time:
// y[r] = Σ_i W[r,i]·x[i] accumulated in float64, rounded once to float32.
// x: [In] → y: [Out].
func MatVec(m *checkpoint.Matrix, e int, x, y []float32) error {
	if len(x) != m.In || len(y) != m.Out {
		return fmt.Errorf("matrix %s: matvec with x[%d] → y[%d], want x[%d] → y[%d]", m.Name, len(x), len(y), m.In, m.Out)
	}
	workers := 1
	if m.Out*m.In >= parallelMin {
		workers = min(runtime.GOMAXPROCS(0), m.Out)
	}
	per := (m.Out + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*per, min((w+1)*per, m.Out)
		wg.Go(func() { errs[w] = matVecRows(m, e, x, y, lo, hi) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// matVecRows computes rows [lo, hi) of MatVec.
func matVecRows(m *checkpoint.Matrix, e int, x, y []float32, lo, hi int) error {
	row := make([]float32, m.In)
	for r := lo; r < hi; r++ {
		if err := Row(m, e, r, row); err != nil {
			return err
		}
		y[r] = dot(row, x)
	}
	return nil
}

// Linear applies MatVec to every row of x. x: [T][In] → [T][Out].
func Linear(m *checkpoint.Matrix, e int, x [][]float32) ([][]float32, error) {
	out := make([][]float32, len(x))
	for t := range x {
		out[t] = make([]float32, m.Out)
		if err := MatVec(m, e, x[t], out[t]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Embed returns row id of the embedding matrix: [H]. Ids outside [0, Out) are an error.
func Embed(m *checkpoint.Matrix, id int32) ([]float32, error) {
	if id < 0 || int(id) >= m.Out {
		return nil, fmt.Errorf("token id %d out of range [0, %d)", id, m.Out)
	}
	row := make([]float32, m.In)
	return row, Row(m, 0, int(id), row)
}

// dot is Σ a[i]·b[i] accumulated in float64, rounded to float32. The float64 product of two
// float32 values is exact, so the result does not depend on whether the compiler fuses multiply-add.
func dot(a, b []float32) float32 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return float32(s)
}

// cloneRows deep-copies a slice of rows.
func cloneRows(rows [][]float32) [][]float32 {
	out := make([][]float32, len(rows))
	for i, r := range rows {
		out[i] = append([]float32(nil), r...)
	}
	return out
}
