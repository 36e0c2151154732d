package safetensors

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestF16RoundTrip: every fp16 pattern widens exactly and narrows back to itself (NaNs stay NaNs).
func TestF16RoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		f := F16ToFloat32(uint16(h))
		if f != f {
			if g := Float32ToF16(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#04x narrows to %#04x", h, g)
			}
			continue
		}
		if g := Float32ToF16(f); g != uint16(h) {
			t.Fatalf("%#04x → %g → %#04x", h, f, g)
		}
	}
}

// TestF16Rounding: Float32ToF16 is the nearest fp16 (ties to even), checked against the neighbours in
// float64, over normal, subnormal, overflowing and tie values.
func TestF16Rounding(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := math.Float32frombits(rapid.Uint32().Draw(rt, "bits"))
		if f != f {
			return
		}
		if rapid.Bool().Draw(rt, "small") { // bring it into fp16's range
			f = float32(math.Ldexp(float64(f), -int(math.Round(math.Log2(math.Abs(float64(f))+1e-40)))+rapid.IntRange(-26, 16).Draw(rt, "exp")))
		}
		h := Float32ToF16(f)
		got := float64(F16ToFloat32(h))
		x := float64(f)
		if math.Abs(x) >= 65520 { // past the last rounding boundary: Inf
			if !math.IsInf(got, int(math.Copysign(1, x))) {
				rt.Fatalf("%g → %g, want Inf", x, got)
			}
			return
		}
		for _, nb := range []uint16{h - 1, h + 1} {
			if nb&0x7c00 == 0x7c00 || (h&0x7fff == 0 && nb == h-1) {
				continue
			}
			alt := float64(F16ToFloat32(nb))
			if da, dg := math.Abs(alt-x), math.Abs(got-x); da < dg || (da == dg && h&1 == 1) {
				rt.Fatalf("%g → %#04x (%g), but %#04x (%g) is nearer or the even tie", x, h, got, nb, alt)
			}
		}
	})
}
