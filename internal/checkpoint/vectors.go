package checkpoint

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/lily-engine/lily/internal/safetensors"
)

// norm loads a zero-centred RMSNorm weight [n] as a float32 multiplier: 1+w for the HF layout,
// the stored value for MLX (which baked the +1 in).
func (l *loader) norm(name string, n int) ([]float32, error) {
	return l.vector(name, n, l.layout == LayoutHF)
}

// vector loads a 1-D float tensor [n] as float32, adding 1 when shift is set.
func (l *loader) vector(name string, n int, shift bool) ([]float32, error) {
	t, err := l.get(name, "a 1-D weight", catOther)
	if err != nil {
		return nil, err
	}
	if !shapeIs(t, n) {
		return nil, fmt.Errorf("tensor %q in %s: shape %v, want [%d]", name, t.File, t.Shape, n)
	}
	v, err := toFloat32(t)
	if err != nil {
		return nil, err
	}
	if shift {
		for i := range v {
			v[i]++
		}
	}
	return v, nil
}

// conv loads the depthwise conv weight as float32 [C, K]: HF stores [C,1,K], MLX [C,K,1]; both
// put w[c][j] at flat index c*K+j, so the conversion is the same.
func (l *loader) conv(name string, C, K int) ([]float32, error) {
	t, err := l.get(name, "the DeltaNet conv weight", catOther)
	if err != nil {
		return nil, err
	}
	want := []int{C, 1, K}
	if l.layout == LayoutMLX {
		want = []int{C, K, 1}
	}
	if !shapeIs(t, want...) {
		return nil, fmt.Errorf("tensor %q in %s: shape %v, want %v (%s layout)", name, t.File, t.Shape, want, l.layout)
	}
	return toFloat32(t)
}

// toFloat32 converts a BF16, F16 or F32 tensor's data.
func toFloat32(t Tensor) ([]float32, error) {
	if !isFloat(t.DType) {
		return nil, fmt.Errorf("tensor %q in %s: dtype %s, want BF16, F16 or F32", t.Name, t.File, t.DType)
	}
	n := int(numel(t.Shape))
	sz := t.DType.Size()
	if len(t.Data) != n*sz {
		return nil, fmt.Errorf("tensor %q in %s: %d data bytes, want %d", t.Name, t.File, len(t.Data), n*sz)
	}
	out := make([]float32, n)
	d := t.Data
	for i := range out {
		switch t.DType {
		case safetensors.BF16:
			out[i] = safetensors.BF16ToFloat32(binary.LittleEndian.Uint16(d[2*i:]))
		case safetensors.F16:
			out[i] = safetensors.F16ToFloat32(binary.LittleEndian.Uint16(d[2*i:]))
		default:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
		}
	}
	return out, nil
}
