package cpu

import "github.com/lily-engine/lily/internal/safetensors"

// qmvRowsPortable computes rows [lo, hi) of the fused-dequantization mat-vec:
// y: [Out] = W: [Out, In] · x: [In], y[o] = Σ_g scale[o,g]·(Σ_i x_i·q_i) + bias[o,g]·(Σ_i x_i).
// One call handles whole rows; the float32 accumulation per group is in element order.
func qmvRowsPortable(y []float32, m *QMat, v *Vec, lo, hi int) {
	groups, rb := m.Groups(), m.RowBytes()
	gb := GroupSize * m.Bits / 8 // packed bytes per group
	for o := lo; o < hi; o++ {
		row := m.W[o*rb : (o+1)*rb]
		sc, bi := m.Scales[o*groups:(o+1)*groups], m.Biases[o*groups:(o+1)*groups]
		var acc float32
		for g := range groups {
			x := v.x[g*GroupSize : (g+1)*GroupSize]
			p := row[g*gb : (g+1)*gb]
			var d0, d1 float32
			if m.Bits == 4 {
				for j, b := range p[:32] {
					d0 += x[2*j] * float32(b&15)
					d1 += x[2*j+1] * float32(b>>4)
				}
			} else {
				for j := 0; j < 64; j += 2 {
					d0 += x[j] * float32(p[j])
					d1 += x[j+1] * float32(p[j+1])
				}
			}
			acc += safetensors.BF16ToFloat32(sc[g])*(d0+d1) + safetensors.BF16ToFloat32(bi[g])*v.sum[g]
		}
		y[o] = acc
	}
}

// qmvQ16RowsPortable is qmvRowsPortable for 4-bit weights against the int16 copy of x:
// y[o] = Σ_g scale[o,g]·(d[g]·(Σ_i q16_i·q_i) + corr[g]) + bias[o,g]·(Σ_i x_i), the inner sum exact
// in int32 (corr: see Vec.PrepareQ16).
func qmvQ16RowsPortable(y []float32, m *QMat, v *Vec, lo, hi int) {
	groups, rb := m.Groups(), m.RowBytes()
	for o := lo; o < hi; o++ {
		row := m.W[o*rb : (o+1)*rb]
		sc, bi := m.Scales[o*groups:(o+1)*groups], m.Biases[o*groups:(o+1)*groups]
		var acc float32
		for g := range groups {
			q := v.q[g*GroupSize : (g+1)*GroupSize]
			var s int32
			for j, b := range row[g*32 : g*32+32] {
				s += int32(q[j])*int32(b&15) + int32(q[32+j])*int32(b>>4) // ≤ 64·15·32767: fits
			}
			acc += safetensors.BF16ToFloat32(sc[g])*(v.d[g]*float32(s)+v.corr[g]) + safetensors.BF16ToFloat32(bi[g])*v.sum[g]
		}
		y[o] = acc
	}
}
