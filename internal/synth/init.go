package synth

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/lily-engine/lily/internal/safetensors"
)

// InitKind says how a tensor's values are generated.
type InitKind int

const (
	// InitUniform: bf16 values Lo + u*(Hi-Lo), u uniform in (0,1).
	InitUniform InitKind = iota + 1
	// InitLogUniform: bf16 values log(Lo + u*(Hi-Lo)) (A_log).
	InitLogUniform
	// InitPacked: uint32 words of uniformly random bits (packed quantized weights).
	InitPacked
	// InitScales: bf16 per-group scales of an affine-quantized matrix, paired with InitBiases.
	InitScales
	// InitBiases: bf16 per-group biases of an affine-quantized matrix, paired with InitScales.
	InitBiases
)

// Init describes the values of one tensor. Generation is counter-based: every element is a pure
// function of (seed, Stream, element index), so any byte range can be produced independently and in
// parallel with the same result.
//
// Quantized matrices: with q uniform in [0, 2^Bits-1], each group g gets a random sign s and an
// amplitude a_g = A*j_g, j_g one of 128 jitter levels in [0.8, 1.2]; scale = s*2*a_g/(2^Bits-1) and
// bias = -s*a_g, so w = scale*q + bias is uniform over [-a_g, a_g], centred, with standard deviation
// Std. The scales and biases tensors of one matrix share a Stream so that their signs and amplitudes
// agree.
type Init struct {
	Kind   InitKind
	Lo, Hi float64 // InitUniform, InitLogUniform
	Std    float64 // InitScales, InitBiases: target standard deviation of the dequantized weights
	Bits   int     // InitScales, InitBiases: 1..8 (4 or 8 in the real layout)
	Stream string  // the random stream's name; the tensor's own name when empty
}

// jitterLo and jitterHi bound the per-group amplitude jitter; jitterMeanSq is E[j^2] for j uniform
// in [jitterLo, jitterHi], used to keep the overall standard deviation at Std.
const (
	jitterLo     = 0.8
	jitterHi     = 1.2
	jitterMeanSq = (jitterHi*jitterHi*jitterHi - jitterLo*jitterLo*jitterLo) / (3 * (jitterHi - jitterLo))
)

// quantAmplitude is the mean group half-range A for which w = scale*q + bias, q uniform on the
// 2^bits levels and a_g jittered, has standard deviation std. A discrete uniform on n+1 evenly spaced
// levels in [-a, a] has variance a^2 (n+2)/(3n).
func quantAmplitude(std float64, bits int) float64 {
	n := float64(int(1)<<bits - 1)
	return std * math.Sqrt(3*n/((n+2)*jitterMeanSq))
}

const gamma = 0x9e3779b97f4a7c15 // the splitmix64 increment

// mix64 is the splitmix64 finaliser: a bijective, well-mixing 64-bit hash.
func mix64(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	return z ^ z>>31
}

// streamKey derives the key of a named random stream from the seed.
func streamKey(seed uint64, stream string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(stream))
	return mix64(mix64(seed+gamma) ^ h.Sum64())
}

// rand64 is element i of the stream with this key (splitmix64 at position i).
func rand64(key, i uint64) uint64 { return mix64(key + (i+1)*gamma) }

// bf16 rounds a float32 to bfloat16 (round to nearest even); NaN stays NaN.
func bf16(f float32) uint16 { return safetensors.Float32ToBF16(f) }

// filler produces a tensor's bytes: fill(dst, off) writes the bytes [off, off+len(dst)) of the
// tensor. off and len(dst) are multiples of the element size; fill is safe for concurrent use.
type filler func(dst []byte, off int64)

// newFiller returns the filler of a tensor with this init for the given seed.
func newFiller(in Init, name string, seed uint64) (filler, error) {
	stream := in.Stream
	if stream == "" {
		stream = name
	}
	key := streamKey(seed, stream)
	switch in.Kind {
	case InitPacked:
		return func(dst []byte, off int64) { fillPacked(dst, off, key) }, nil
	case InitUniform, InitLogUniform:
		lo, width, log := float32(in.Lo), float32(in.Hi-in.Lo), in.Kind == InitLogUniform
		return func(dst []byte, off int64) {
			e := uint64(off / 2)
			for i := 0; i+1 < len(dst); i, e = i+2, e+1 {
				// four 16-bit uniforms per random word
				u := (float32(rand64(key, e/4)>>(16*(e%4))&0xffff) + 0.5) / 65536
				v := lo + u*width
				if log {
					v = float32(math.Log(float64(v)))
				}
				binary.LittleEndian.PutUint16(dst[i:], bf16(v))
			}
		}, nil
	case InitScales, InitBiases:
		if in.Bits < 1 || in.Bits > 8 || in.Std <= 0 {
			return nil, fmt.Errorf("tensor %q: quantization init needs bits in [1,8] and std > 0, got %d and %g", name, in.Bits, in.Std)
		}
		// Each group draws one random byte: bit 0 is the sign s, bits 1..7 one of 128 jitter levels.
		// The byte indexes a table of the bf16 values: scales s*2a/n, biases -s*a (see Init).
		amp := quantAmplitude(in.Std, in.Bits)
		mult := -1.0
		if in.Kind == InitScales {
			mult = 2 / float64(int(1)<<in.Bits-1)
		}
		var table [256]uint16
		for r := range table {
			a := amp * (jitterLo + (jitterHi-jitterLo)*(float64(r>>1)+0.5)/128)
			if r&1 == 1 {
				a = -a
			}
			table[r] = bf16(float32(mult * a))
		}
		return func(dst []byte, off int64) {
			g := uint64(off / 2)
			var word uint64
			for i := 0; i+1 < len(dst); i, g = i+2, g+1 {
				if i == 0 || g%8 == 0 { // eight groups per random word
					word = rand64(key, g/8)
				}
				binary.LittleEndian.PutUint16(dst[i:], table[byte(word>>(8*(g%8)))])
			}
		}, nil
	}
	return nil, fmt.Errorf("tensor %q: unknown init kind %d", name, in.Kind)
}

// fillPacked writes random bytes: byte b of the tensor is byte b%8 of rand64(key, b/8).
func fillPacked(dst []byte, off int64, key uint64) {
	w := uint64(off / 8)
	i := 0
	if r := int(off % 8); r != 0 { // a range starting inside a word
		var tmp [8]byte
		binary.LittleEndian.PutUint64(tmp[:], rand64(key, w))
		i = copy(dst, tmp[r:])
		w++
	}
	for ; i+8 <= len(dst); i, w = i+8, w+1 {
		binary.LittleEndian.PutUint64(dst[i:], rand64(key, w))
	}
	if i < len(dst) {
		var tmp [8]byte
		binary.LittleEndian.PutUint64(tmp[:], rand64(key, w))
		copy(dst[i:], tmp[:])
	}
}
