package checkpoint

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/lily-engine/lily/internal/safetensors"
	"github.com/lily-engine/lily/internal/tensortable"
)

// vector loads a 1-D float tensor t [n] as float32. A layer norm (tensortable.Norm) is a
// zero-centred RMSNorm weight in HF, returned as the multiplier 1+w; MLX baked the +1 in, and the
// gated norm, A_log and dt_bias are used as stored in both layouts.
func (l *loader) vector(t tensortable.Tensor) ([]float32, error) {
	x, err := l.get(t.Name, "a 1-D weight", catOther)
	if err != nil {
		return nil, err
	}
	if !shapeIs(x, t.Shape...) {
		return nil, fmt.Errorf("tensor %q in %s: shape %v, want %v", t.Name, x.File, x.Shape, t.Shape)
	}
	v, err := toFloat32(x)
	if err != nil {
		return nil, err
	}
	if t.Kind == tensortable.Norm && l.layout == LayoutHF {
		for i := range v {
			v[i]++
		}
	}
	return v, nil
}

// conv loads the depthwise conv weight t as float32 [C, K]: HF stores [C,1,K], MLX [C,K,1]; both
// put w[c][j] at flat index c*K+j, so the conversion is the same.
func (l *loader) conv(t tensortable.Tensor) ([]float32, error) {
	x, err := l.get(t.Name, "the DeltaNet conv weight", catOther)
	if err != nil {
		return nil, err
	}
	if !shapeIs(x, t.Shape...) {
		return nil, fmt.Errorf("tensor %q in %s: shape %v, want %v (%s layout)", t.Name, x.File, x.Shape, t.Shape, l.layout)
	}
	return toFloat32(x)
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
