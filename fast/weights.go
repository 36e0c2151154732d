package fast

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/safetensors"
)

// mat is one matrix view the plans multiply by — a plain matrix or one expert of a stacked one —
// resolved once at load time to slices of the mapped files. W: [Out, In].
type mat struct {
	out, in int
	bits    int      // 0 dense, 4 or 8 quantized (group 64)
	group   int      // quantization group size
	w       []byte   // quantized: Out rows of In*bits/8 bytes; dense: Out rows of In elements
	scales  []uint16 // quantized: [Out, In/group] bf16
	biases  []uint16
	dtype   safetensors.DType // dense element type: BF16, F16 or F32
	q       *cpu.QMat         // the same quantized view for the fast/cpu kernels (nil when dense)
}

// view resolves expert e (0 for a plain matrix) of m.
func view(m *checkpoint.Matrix, e int) (*mat, error) {
	v := &mat{out: m.Out, in: m.In, bits: m.Bits, group: m.GroupSize, dtype: m.W.DType}
	first := e*m.StoredRows + m.RowOffset
	switch m.Bits {
	case 0:
		es := m.W.DType.Size()
		if m.W.DType != safetensors.BF16 && m.W.DType != safetensors.F16 && m.W.DType != safetensors.F32 {
			return nil, fmt.Errorf("fast: %s: dense dtype %s unsupported", m.Name, m.W.DType)
		}
		v.w = m.W.Data[first*m.In*es : (first+m.Out)*m.In*es]
	case 4, 8:
		if m.GroupSize <= 0 || m.In%m.GroupSize != 0 {
			return nil, fmt.Errorf("fast: %s: group size %d does not divide %d", m.Name, m.GroupSize, m.In)
		}
		rb := m.In * m.Bits / 8
		ng := m.In / m.GroupSize
		v.w = m.W.Data[first*rb : (first+m.Out)*rb]
		v.scales = u16(m.Scales.Data)[first*ng : (first+m.Out)*ng]
		v.biases = u16(m.Biases.Data)[first*ng : (first+m.Out)*ng]
		if m.GroupSize == cpu.GroupSize { // other group sizes run on the plain loops
			v.q = &cpu.QMat{Bits: m.Bits, Out: m.Out, In: m.In, W: v.w, Scales: v.scales, Biases: v.biases}
			if err := v.q.Check(); err != nil {
				return nil, fmt.Errorf("fast: %s: %w", m.Name, err)
			}
		}
	default:
		return nil, fmt.Errorf("fast: %s: %d-bit weights unsupported", m.Name, m.Bits)
	}
	return v, nil
}

// views resolves every expert of a stacked matrix (or the one plain matrix).
func views(m *checkpoint.Matrix) ([]*mat, error) {
	n := max(m.Experts, 1)
	out := make([]*mat, n)
	for e := range out {
		v, err := view(m, e)
		if err != nil {
			return nil, err
		}
		out[e] = v
	}
	return out, nil
}

// u16 reinterprets little-endian bf16 bytes as uint16 values without copying.
func u16(b []byte) []uint16 {
	if len(b) < 2 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}

func bf16(b uint16) float32 { return safetensors.BF16ToFloat32(b) }

// rowDot returns W[o] · x, dequantizing the row group by group: Σ_g s_g Σ q_i x_i + b_g Σ x_i.
func (m *mat) rowDot(o int, x []float32) float32 {
	switch m.bits {
	case 4, 8:
		ng := m.in / m.group
		rb := m.in * m.bits / 8
		row := m.w[o*rb : (o+1)*rb]
		var acc float32
		gb := m.group * m.bits / 8
		for g := 0; g < ng; g++ {
			xs := x[g*m.group : (g+1)*m.group]
			pb := row[g*gb : (g+1)*gb]
			var qx, sx float32
			if m.bits == 4 {
				for i := 0; i < len(pb); i += 4 {
					word := binary.LittleEndian.Uint32(pb[i:])
					xx := xs[i*2 : i*2+8]
					for k := 0; k < 8; k++ {
						qx += float32((word>>(4*k))&15) * xx[k]
						sx += xx[k]
					}
				}
			} else {
				for i, q := range pb {
					qx += float32(q) * xs[i]
					sx += xs[i]
				}
			}
			acc += bf16(m.scales[o*ng+g])*qx + bf16(m.biases[o*ng+g])*sx
		}
		return acc
	default:
		var acc float32
		switch m.dtype {
		case safetensors.BF16:
			r := u16(m.w[o*m.in*2 : (o+1)*m.in*2])
			for i, b := range r {
				acc += bf16(b) * x[i]
			}
		case safetensors.F32:
			r := m.w[o*m.in*4 : (o+1)*m.in*4]
			for i := range x {
				acc += math.Float32frombits(binary.LittleEndian.Uint32(r[i*4:])) * x[i]
			}
		case safetensors.F16:
			r := u16(m.w[o*m.in*2 : (o+1)*m.in*2])
			for i, b := range r {
				acc += safetensors.F16ToFloat32(b) * x[i]
			}
		}
		return acc
	}
}

// vecRows: y[o] = W[o] · x for o in [lo, hi). x: [In], y: [Out].
func (m *mat) vecRows(x, y []float32, lo, hi int) {
	for o := lo; o < hi; o++ {
		y[o] = m.rowDot(o, x)
	}
}

// mulRows: Y[t][o] = W[o] · X[t] for o in [lo, hi) and every t < T. X: [T, In], Y: [T, yStride].
// Each row is dequantized once into tmp ([In]) and reused across the T tokens.
func (m *mat) mulRows(x []float32, t int, y []float32, yStride int, tmp []float32, lo, hi int) {
	for o := lo; o < hi; o++ {
		m.dequantRow(o, tmp)
		for i := 0; i < t; i++ {
			y[i*yStride+o] = dot(tmp, x[i*m.in:(i+1)*m.in])
		}
	}
}

// dequantRow writes W[o] as float32 into dst: [In].
func (m *mat) dequantRow(o int, dst []float32) {
	switch m.bits {
	case 4, 8:
		ng := m.in / m.group
		rb := m.in * m.bits / 8
		row := m.w[o*rb : (o+1)*rb]
		mask := uint32(1)<<m.bits - 1
		per := 32 / m.bits
		for i := 0; i < m.in; i += per {
			word := binary.LittleEndian.Uint32(row[i*m.bits/8:])
			g := i / m.group
			s, b := bf16(m.scales[o*ng+g]), bf16(m.biases[o*ng+g])
			for k := 0; k < per; k++ {
				dst[i+k] = s*float32((word>>(uint(k*m.bits)))&mask) + b
			}
		}
	default:
		switch m.dtype {
		case safetensors.BF16:
			for i, b := range u16(m.w[o*m.in*2 : (o+1)*m.in*2]) {
				dst[i] = bf16(b)
			}
		case safetensors.F16:
			for i, b := range u16(m.w[o*m.in*2 : (o+1)*m.in*2]) {
				dst[i] = safetensors.F16ToFloat32(b)
			}
		case safetensors.F32:
			r := m.w[o*m.in*4 : (o+1)*m.in*4]
			for i := range dst[:m.in] {
				dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(r[i*4:]))
			}
		}
	}
}
