package checkpoint

// RowBytes is the stored size of one logical row of W: In elements for a dense matrix,
// In*Bits/32 uint32 words when quantized.
func (m *Matrix) RowBytes() int {
	if m.Bits > 0 {
		return m.In * m.Bits / 8
	}
	return m.In * m.W.DType.Size()
}

// Row returns logical row r of expert e (e = 0 for a plain matrix) as views of the stored data:
// w holds the row's elements (or packed words), and for a quantized matrix scales and biases
// hold its In/GroupSize bf16 values (nil when dense). Row window offsets are applied here.
// Out-of-range e or r panic like a slice index.
func (m *Matrix) Row(e, r int) (w, scales, biases []byte) {
	if r < 0 || r >= m.Out || e < 0 || e >= max(m.Experts, 1) {
		panic("checkpoint: Matrix.Row index out of range")
	}
	i := e*m.StoredRows + m.RowOffset + r
	n := m.RowBytes()
	w = m.W.Data[i*n : (i+1)*n : (i+1)*n]
	if m.Bits > 0 {
		sn := m.In / m.GroupSize * 2
		scales = m.Scales.Data[i*sn : (i+1)*sn : (i+1)*sn]
		biases = m.Biases.Data[i*sn : (i+1)*sn : (i+1)*sn]
	}
	return w, scales, biases
}
