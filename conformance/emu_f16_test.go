package conformance

import (
	"encoding/binary"
	"github.com/lily-engine/lily/metal/budget"
	"testing"

	"github.com/lily-engine/lily/internal/safetensors"
	"github.com/lily-engine/lily/metal/device"
)

const kvF16Tol = budget.KVF16 // the budget and why: metal/budget

const kvF16Ulp = budget.KVF16Ulp // the budget and why: metal/budget

// f16 packs x as little-endian IEEE half, rounded to nearest even (the cache's layout).
func f16(x []float32) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], safetensors.Float32ToF16(v))
	}
	return b
}

// f16Rows is f16 of the rows laid end to end.
func f16Rows(rows [][]float32) []byte {
	var b []byte
	for _, r := range rows {
		b = append(b, f16(r)...)
	}
	return b
}

// unf16 unpacks little-endian IEEE half.
func unf16(b []byte) []float32 {
	x := make([]float32, len(b)/2)
	for i := range x {
		x[i] = safetensors.F16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return x
}

// roundF16 is x as the cache stores it.
func roundF16(x []float32) []float32 { return unf16(f16(x)) }

// testABIProbe runs the probe `lily doctor` runs first on a device (device.ABIProbe: positions
// over an odd grid, a window at a non-zero offset, inline constants) on an emulator device.
func testABIProbe(t *testing.T, _ kern) {
	dev, err := device.NewEmuDevice()
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if err := device.ABIProbe(dev); err != nil {
		t.Fatal(err)
	}
}
