package emu

import (
	"strings"
	"testing"
)

func TestRewrite(t *testing.T) {
	for in, want := range map[string]string{
		"device const float* x [[buffer(0)]]": "lily_emu::dptr<const float> x [[buffer(0)]]",
		"const device uint *w":                "lily_emu::dptr<const uint> w",
		"device atomic_uint* c":               "lily_emu::dptr<atomic_uint> c",
		"  threadgroup float part[32];":       "  LILY_TG_ARRAY(float, part, 32);",
		"threadgroup uint s[N * 2] ;":         "LILY_TG_ARRAY(uint, s, N * 2);",
		"threadgroup_barrier(mem_flags::mem_threadgroup); // threadgroup float x;": "threadgroup_barrier(mem_flags::mem_threadgroup); // threadgroup float x;",
	} {
		got, err := rewrite(in)
		if err != nil || got != want {
			t.Errorf("rewrite(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"threadgroup float* p = buf;", "threadgroup float s;", "threadgroup float m[8][8];"} {
		if _, err := rewrite(bad); err == nil || !strings.Contains(err.Error(), "unsupported threadgroup declaration") {
			t.Errorf("rewrite(%q): %v, want an unsupported-declaration error", bad, err)
		}
	}
}

// TestAddressSpaceMisuse checks that what Metal's compiler rejects for address spaces fails to
// compile on the emulator too, where plain C++ pointers would accept it.
func TestAddressSpaceMisuse(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles C++ (slow); skipped in -short")
	}
	const head = "#include <metal_stdlib>\nusing namespace metal;\nstruct D { uint n; };\n"
	for name, src := range map[string]string{
		"threadgroup memory as a device pointer": `inline float first(device const float* p) { return p[0]; }
kernel void k(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  threadgroup float tmp[32];
  tmp[i] = 1.0f;
  y[i] = first(tmp);
}`,
		"a write through constant": `kernel void k(device float* y [[buffer(0)]], constant D& d [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  d.n = 3u;
  y[i] = float(d.n);
}`,
		"a write through a const device pointer": `kernel void k(device const float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  x[i] = 1.0f;
}`,
	} {
		e, err := Build(map[string]string{"bad.metal": head + src})
		if err == nil {
			e.Close()
			t.Errorf("%s: compiled", name)
		} else if !strings.Contains(err.Error(), "compiling the kernels failed") {
			t.Errorf("%s: %v, want a compile error", name, err)
		}
	}
}
