package safetensors

import (
	"math"
	"testing"
)

func TestBF16(t *testing.T) {
	for _, c := range []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1.0
		{0x3f808000, 0x3f80}, // halfway, even stays
		{0x3f818000, 0x3f82}, // halfway, odd rounds up
		{0x3f808001, 0x3f81}, // above halfway
		{0x7f7fffff, 0x7f80}, // max float32 rounds to +Inf
	} {
		if got := Float32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("bf16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if f := BF16ToFloat32(Float32ToBF16(float32(math.NaN()))); !math.IsNaN(float64(f)) {
		t.Error("NaN did not stay NaN")
	}
	for b := 0; b < 1<<16; b++ { // every non-NaN bf16 survives the round trip
		if f := BF16ToFloat32(uint16(b)); f == f && Float32ToBF16(f) != uint16(b) {
			t.Fatalf("bf16 %#04x round trip gives %#04x", b, Float32ToBF16(f))
		}
	}
}

func TestF16(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, // 65520 is halfway to 2^16: rounds to Inf
		{float32(math.Ldexp(1, -24)), 0x0001}, {float32(math.Ldexp(1, -25)), 0x0000}, // tie to even (zero)
		{float32(math.Ldexp(3, -26)), 0x0001}, {float32(math.Ldexp(1, -14)), 0x0400},
	} {
		if got := Float32ToF16(c.in); got != c.want {
			t.Errorf("f16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	for h := 0; h < 1<<16; h++ { // every non-NaN half survives the round trip
		if f := F16ToFloat32(uint16(h)); f == f && Float32ToF16(f) != uint16(h) {
			t.Fatalf("f16 %#04x → %g → %#04x", h, f, Float32ToF16(f))
		}
	}
}
