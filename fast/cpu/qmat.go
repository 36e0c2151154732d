package cpu

import "fmt"

// GroupSize is the quantization group along the input axis (model.md §3.1).
const GroupSize = 64

// MaxIn is the largest input length the kernels accept (the model's largest is 4096).
const MaxIn = 8192

// QMat is a view of one MLX affine-quantized matrix W: [Out, In] in its stored form.
//
// W holds Out rows of In*Bits/8 bytes: little-endian uint32 words with element k of a word in bits
// [k*Bits, (k+1)*Bits). Scales and Biases hold Out rows of In/64 bf16 bit patterns; the weight is
// w[o][i] = scale[o][i/64]*q + bias[o][i/64] with q unsigned. Scales may be negative.
// A stacked expert or a row window is expressed by slicing the caller's buffers.
type QMat struct {
	Bits    int // 4 or 8
	Out, In int
	W       []byte
	Scales  []uint16
	Biases  []uint16
}

// RowBytes is the number of packed bytes per row.
func (m *QMat) RowBytes() int { return m.In * m.Bits / 8 }

// Groups is the number of quantization groups per row.
func (m *QMat) Groups() int { return m.In / GroupSize }

// Check reports whether the buffers hold exactly the shape m declares.
func (m *QMat) Check() error {
	switch {
	case m.Bits != 4 && m.Bits != 8:
		return fmt.Errorf("qmat: bits %d, want 4 or 8", m.Bits)
	case m.Out <= 0 || m.In <= 0 || m.In%GroupSize != 0 || m.In > MaxIn:
		return fmt.Errorf("qmat: shape [%d, %d]: In must be a positive multiple of %d, at most %d", m.Out, m.In, GroupSize, MaxIn)
	case len(m.W) < m.Out*m.RowBytes():
		return fmt.Errorf("qmat: %d packed bytes, want %d", len(m.W), m.Out*m.RowBytes())
	case len(m.Scales) < m.Out*m.Groups() || len(m.Biases) < m.Out*m.Groups():
		return fmt.Errorf("qmat: %d scales, %d biases, want %d", len(m.Scales), len(m.Biases), m.Out*m.Groups())
	}
	return nil
}
