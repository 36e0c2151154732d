package checkpoint

import (
	"fmt"

	"github.com/lily-engine/lily/internal/safetensors"
	"github.com/lily-engine/lily/internal/tensortable"
)

// matrix loads the linear module stored at path (path.weight, plus path.scales and
// path.biases when quantized) with logical shape [out, in], or [experts, out, in].
func (l *loader) matrix(logical, path string, experts, out, in int, cat category) (Matrix, error) {
	return l.window(logical, path, path+tensortable.WeightSuffix, experts, out, out, 0, in, cat)
}

// window loads rows [rowOffset, rowOffset+out) of each expert of a stored tensor wKey whose
// experts hold storedRows rows each (model.md §2.1, the fused experts.gate_up_proj). The
// module path names the scales/biases and the quantization override.
func (l *loader) window(logical, path, wKey string, experts, storedRows, out, rowOffset, in int, cat category) (Matrix, error) {
	m := Matrix{Name: logical, Experts: experts, Out: out, In: in, StoredRows: storedRows, RowOffset: rowOffset}
	w, err := l.get(wKey, "needed for "+logical, cat)
	if err != nil {
		return m, err
	}
	m.W = w
	var lead []int
	if experts > 0 {
		lead = []int{experts}
	}
	sKey, bKey := path+tensortable.ScalesSuffix, path+tensortable.BiasesSuffix
	if _, quantized := l.ts[sKey]; !quantized {
		if !isFloat(w.DType) {
			return m, fmt.Errorf("tensor %q in %s: dtype %s, want BF16, F16 or F32 (or U32 with .scales)", wKey, w.File, w.DType)
		}
		if want := append(lead, storedRows, in); !shapeIs(w, want...) {
			return m, fmt.Errorf("tensor %q in %s: shape %v, want %v", wKey, w.File, w.Shape, want)
		}
		return m, nil
	}
	q := l.cfg.Quant
	if q == nil {
		return m, fmt.Errorf("tensor %q in %s is quantized (%s exists) but config.json has no quantization", wKey, w.File, sKey)
	}
	p := q.Params(path)
	if p.Bits == 0 {
		return m, fmt.Errorf("tensor %q in %s is quantized but config.json's quantization leaves %q unquantized", wKey, w.File, path)
	}
	if m.Scales, err = l.get(sKey, "scales of "+logical, cat); err != nil {
		return m, err
	}
	if m.Biases, err = l.get(bKey, "biases of "+logical, cat); err != nil {
		return m, err
	}
	if w.DType != safetensors.U32 {
		return m, fmt.Errorf("tensor %q in %s: dtype %s, want U32 (packed, quantized)", wKey, w.File, w.DType)
	}
	for _, t := range []Tensor{m.Scales, m.Biases} {
		if t.DType != safetensors.BF16 {
			return m, fmt.Errorf("tensor %q in %s: dtype %s, want BF16", t.Name, t.File, t.DType)
		}
	}
	if in%p.GroupSize != 0 || in*p.Bits%32 != 0 {
		return m, fmt.Errorf("tensor %q: in-dim %d is not a multiple of group_size %d and of %d/bits", wKey, in, p.GroupSize, 32/p.Bits)
	}
	// bits = 32*packed_cols / (scale_cols*group_size) must agree with the config (model.md §2.4).
	pc, sc := lastDim(w), lastDim(m.Scales)
	if sc > 0 && 32*pc%(sc*p.GroupSize) == 0 {
		if got := 32 * pc / (sc * p.GroupSize); got != p.Bits {
			return m, fmt.Errorf("tensor %q in %s: shapes %v / %v mean %d-bit with group_size %d, but config.json says %d-bit for %q",
				wKey, w.File, w.Shape, m.Scales.Shape, got, p.GroupSize, p.Bits, path)
		}
	}
	if want := append(lead, storedRows, in*p.Bits/32); !shapeIs(w, want...) {
		return m, fmt.Errorf("tensor %q in %s: shape %v, want %v (%d-bit, %d inputs)", wKey, w.File, w.Shape, want, p.Bits, in)
	}
	for _, t := range []Tensor{m.Scales, m.Biases} {
		if want := append(lead, storedRows, in/p.GroupSize); !shapeIs(t, want...) {
			return m, fmt.Errorf("tensor %q in %s: shape %v, want %v (group_size %d)", t.Name, t.File, t.Shape, want, p.GroupSize)
		}
	}
	m.Bits, m.GroupSize = p.Bits, p.GroupSize
	return m, nil
}

func lastDim(t Tensor) int {
	if len(t.Shape) == 0 {
		return 0
	}
	return t.Shape[len(t.Shape)-1]
}

// logicalParams is the number of weights a matrix represents (quantized ones by logical size).
func (m *Matrix) logicalParams() int64 {
	e := int64(max(m.Experts, 1))
	return e * int64(m.Out) * int64(m.In)
}

// storedBytes is the bytes of W, Scales and Biases that belong to this view (a row window
// owns Out/StoredRows of the stored tensors).
func (m *Matrix) storedBytes() int64 {
	b := nbytes(m.W)
	if m.Bits > 0 {
		b += nbytes(m.Scales) + nbytes(m.Biases)
	}
	if m.StoredRows == 0 {
		return 0
	}
	return b * int64(m.Out) / int64(m.StoredRows)
}
