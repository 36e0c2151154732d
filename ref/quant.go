package ref

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/safetensors"
)

// Quantize packs w in MLX affine format (model.md §3.1, §3.3): groups of groupSize consecutive
// elements along In; per group, in float32,
//
//	n = 2^bits − 1; scale = max((max−min)/n, 1e-7), negated unless |min| > |max|
//	edge = the extreme with the larger magnitude; q0 = rint(edge/scale)
//	if q0 ≠ 0 { scale = edge/q0; bias = edge } else { bias = 0 }
//	q = clamp(rint((w − bias)/scale), 0, n)
//
// with scale and bias stored as bf16 and q packed lowest bits first into little-endian uint32 words.
// w: [Experts or 1, Out, In] row-major; experts is 0 for a plain matrix. It is meant for tests and
// tools: the loader never re-quantizes.
func Quantize(name string, w []float32, experts, out, in, bits, groupSize int) (checkpoint.Matrix, error) {
	if bits != 4 && bits != 8 {
		return checkpoint.Matrix{}, fmt.Errorf("quantize %s: bits %d, want 4 or 8", name, bits)
	}
	if out <= 0 || in <= 0 || experts < 0 || groupSize <= 0 || in%groupSize != 0 || groupSize%(32/bits) != 0 {
		return checkpoint.Matrix{}, fmt.Errorf("quantize %s: bad shape experts=%d out=%d in=%d group=%d", name, experts, out, in, groupSize)
	}
	rows := max(experts, 1) * out
	if len(w) != rows*in {
		return checkpoint.Matrix{}, fmt.Errorf("quantize %s: %d values, want %d", name, len(w), rows*in)
	}
	groups := in / groupSize
	packed := make([]byte, 0, rows*in*bits/8)
	scales := make([]byte, 0, rows*groups*2)
	biases := make([]byte, 0, rows*groups*2)
	q := make([]uint8, groupSize)
	for g := 0; g < rows*groups; g++ {
		scale, bias := quantizeGroup(w[g*groupSize:(g+1)*groupSize], bits, q)
		packed = append(packed, packWords(q, bits)...)
		scales = binary.LittleEndian.AppendUint16(scales, safetensors.Float32ToBF16(scale))
		biases = binary.LittleEndian.AppendUint16(biases, safetensors.Float32ToBF16(bias))
	}
	shape := func(last int) []int {
		if experts > 0 {
			return []int{experts, out, last}
		}
		return []int{out, last}
	}
	return checkpoint.Matrix{
		Name: name, Experts: experts, Out: out, In: in, Bits: bits, GroupSize: groupSize,
		W:          checkpoint.Tensor{Name: name + ".weight", DType: safetensors.U32, Shape: shape(in * bits / 32), Data: packed},
		Scales:     checkpoint.Tensor{Name: name + ".scales", DType: safetensors.BF16, Shape: shape(groups), Data: scales},
		Biases:     checkpoint.Tensor{Name: name + ".biases", DType: safetensors.BF16, Shape: shape(groups), Data: biases},
		StoredRows: out,
	}, nil
}

// quantizeGroup implements model.md §3.3 for one group (MLX's CPU quantize, float32 throughout);
// it fills q and returns the float32 scale and bias before their bf16 rounding.
func quantizeGroup(w []float32, bits int, q []uint8) (scale, bias float32) {
	nBins := float32(int(1)<<bits - 1)
	const eps = 1e-7
	wMin, wMax := w[0], w[0]
	for _, v := range w[1:] {
		wMin, wMax = min(wMin, v), max(wMax, v)
	}
	mask := abs32(wMin) > abs32(wMax)
	scale = max((wMax-wMin)/nBins, eps)
	edge := wMax
	if mask {
		edge = wMin
	} else {
		scale = -scale
	}
	q0 := float32(math.RoundToEven(float64(edge / scale)))
	if q0 != 0 {
		scale = edge / q0
		bias = edge
	}
	for j, v := range w {
		r := float32(math.RoundToEven(float64((v - bias) / scale)))
		q[j] = uint8(min(max(r, 0), nBins))
	}
	return scale, bias
}

// packWords packs unsigned values of the given bit width into little-endian uint32 words,
// element k of a word in bits [k*bits, (k+1)*bits) (model.md §3.1). len(q) is a multiple of 32/bits.
func packWords(q []uint8, bits int) []byte {
	per := 32 / bits
	out := make([]byte, 0, len(q)*bits/8)
	for i := 0; i < len(q); i += per {
		var word uint32
		for k := 0; k < per; k++ {
			word |= uint32(q[i+k]) << (k * bits)
		}
		out = binary.LittleEndian.AppendUint32(out, word)
	}
	return out
}

// DenseMatrix stores w as a dense matrix of dtype BF16, F16 or F32 (rounding to nearest even).
// w: [Experts or 1, Out, In] row-major. Meant for tests and tools.
func DenseMatrix(name string, w []float32, experts, out, in int, dtype checkpoint.DType) (checkpoint.Matrix, error) {
	if out <= 0 || in <= 0 || experts < 0 || len(w) != max(experts, 1)*out*in {
		return checkpoint.Matrix{}, fmt.Errorf("dense %s: %d values for experts=%d out=%d in=%d", name, len(w), experts, out, in)
	}
	data := make([]byte, 0, len(w)*dtype.Size())
	for _, v := range w {
		switch dtype {
		case safetensors.BF16:
			data = binary.LittleEndian.AppendUint16(data, safetensors.Float32ToBF16(v))
		case safetensors.F16:
			data = binary.LittleEndian.AppendUint16(data, safetensors.Float32ToF16(v))
		case safetensors.F32:
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		default:
			return checkpoint.Matrix{}, fmt.Errorf("dense %s: dtype %v not supported", name, dtype)
		}
	}
	shape := []int{out, in}
	if experts > 0 {
		shape = []int{experts, out, in}
	}
	return checkpoint.Matrix{
		Name: name, Experts: experts, Out: out, In: in,
		W:          checkpoint.Tensor{Name: name + ".weight", DType: dtype, Shape: shape, Data: data},
		StoredRows: out,
	}, nil
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }
