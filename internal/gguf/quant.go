package gguf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/lily-engine/lily/internal/safetensors"
)

// QuantizeQ4_0 appends x (a whole number of 32-element blocks) to dst as Q4_0 blocks, the way
// ggml's reference quantizer does: per block, d = m/−8 where m is the element of largest
// magnitude (the first of equals), then q = min(15, trunc(x/d + 8.5)); the fp16 d, then 16 bytes
// whose low nibbles hold elements 0…15 and high nibbles elements 16…31.
func QuantizeQ4_0(dst []byte, x []float32) ([]byte, error) {
	if len(x)%32 != 0 {
		return dst, fmt.Errorf("gguf: q4_0: %d values are not whole blocks of 32", len(x))
	}
	for b := 0; b < len(x); b += 32 {
		blk := x[b : b+32]
		var amax, m float32
		for _, v := range blk {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax, m = a, v
			}
		}
		d := m / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		dst = binary.LittleEndian.AppendUint16(dst, safetensors.Float32ToF16(d))
		for j := 0; j < 16; j++ {
			// float32(…) rounds the product before the add, as ggml does (no fused multiply-add).
			lo := min(15, int8(float32(blk[j]*id)+8.5))
			hi := min(15, int8(float32(blk[16+j]*id)+8.5))
			dst = append(dst, byte(lo)|byte(hi)<<4)
		}
	}
	return dst, nil
}

// DequantizeQ4_0 appends the values of Q4_0 blocks to dst: x = d·(q − 8).
func DequantizeQ4_0(dst []float32, blocks []byte) ([]float32, error) {
	if len(blocks)%18 != 0 {
		return dst, fmt.Errorf("gguf: q4_0: %d bytes are not whole blocks of 18", len(blocks))
	}
	for b := 0; b < len(blocks); b += 18 {
		d := safetensors.F16ToFloat32(binary.LittleEndian.Uint16(blocks[b:]))
		qs := blocks[b+2 : b+18]
		var out [32]float32
		for j, q := range qs {
			out[j] = d * float32(int(q&15)-8)
			out[16+j] = d * float32(int(q>>4)-8)
		}
		dst = append(dst, out[:]...)
	}
	return dst, nil
}

// AppendF32 appends x as little-endian float32 to dst.
func AppendF32(dst []byte, x []float32) []byte {
	for _, v := range x {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
	}
	return dst
}
