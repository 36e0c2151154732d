package emu

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// semantics exercises each emulated feature with a result computable by hand.
const semantics = `#include <metal_stdlib>
using namespace metal;

// Sum of a threadgroup's inputs through threadgroup memory and barriers (tree reduction).
kernel void tg_sum(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                   uint tid [[thread_position_in_threadgroup]], uint gid [[threadgroup_position_in_grid]],
                   uint n [[threads_per_threadgroup]]) {
    threadgroup float buf[256];
    buf[tid] = x[gid * n + tid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = n / 2; s > 0; s >>= 1) {
        if (tid < s) buf[tid] += buf[tid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (tid == 0) out[gid] = buf[0];
}

// Per-lane results of the SIMD-group functions.
kernel void simd_ops(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
    float v = x[i];
    out[i * 5 + 0] = simd_sum(v);
    out[i * 5 + 1] = simd_max(v);
    out[i * 5 + 2] = simd_prefix_exclusive_sum(v);
    out[i * 5 + 3] = simd_shuffle(v, (ushort)((lane + 1) % 32));
    out[i * 5 + 4] = simd_broadcast(v, (ushort)3);
}

// C = A*B for 8x8 matrices through simdgroup matrices.
kernel void mma8(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                 device float* c [[buffer(2)]], uint lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 A, B, C = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_load(A, a, 8);
    simdgroup_load(B, b, 8);
    simdgroup_multiply_accumulate(C, A, B, C);
    simdgroup_store(C, c, 8);
}

// Histogram with device atomics; half and bfloat round trips.
kernel void hist(device const uint* x [[buffer(0)]], device atomic_uint* h [[buffer(1)]],
                 device half* hv [[buffer(2)]], device bfloat* bv [[buffer(3)]],
                 uint i [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(&h[x[i] % 4], 1u, memory_order_relaxed);
    hv[i] = half(float(x[i]) / 3.0f);
    bv[i] = bfloat(float(x[i]) / 3.0f);
}
`

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[i*4:]))
	}
	return out
}

func bytesOf(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[i*4:], math.Float32bits(v))
	}
	return b
}

func TestEmulatorSemantics(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles C++ (slow); skipped in -short")
	}
	e, err := Build(map[string]string{"semantics.metal": semantics})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	t.Run("barrier_reduction", func(t *testing.T) {
		x := make([]float32, 3*128)
		for i := range x {
			x[i] = float32(i % 7)
		}
		out := make([]byte, 3*4)
		if err := e.Dispatch("tg_sum", [3]int{3, 1, 1}, [3]int{128, 1, 1}, map[int][]byte{0: bytesOf(x), 1: out}); err != nil {
			t.Fatal(err)
		}
		for g, got := range f32s(out) {
			var want float32
			for _, v := range x[g*128 : (g+1)*128] {
				want += v
			}
			if got != want {
				t.Fatalf("group %d: sum %v, want %v", g, got, want)
			}
		}
	})

	t.Run("simd_functions", func(t *testing.T) {
		const n = 64 + 8 // two full SIMD groups and a partial one of 8 lanes
		x := make([]float32, n)
		for i := range x {
			x[i] = float32((i*5)%11) - 3
		}
		out := make([]byte, n*5*4)
		if err := e.Dispatch("simd_ops", [3]int{1, 1, 1}, [3]int{n, 1, 1}, map[int][]byte{0: bytesOf(x), 1: out}); err != nil {
			t.Fatal(err)
		}
		got := f32s(out)
		for i := 0; i < n; i++ {
			g0 := i / 32 * 32
			size := min(32, n-g0)
			lane := i - g0
			var sum, pre float32
			mx := float32(math.Inf(-1))
			for j := 0; j < size; j++ {
				sum += x[g0+j]
				mx = max(mx, x[g0+j])
				if j < lane {
					pre += x[g0+j]
				}
			}
			src := (lane + 1) % 32
			shuf := x[i]
			if src < size {
				shuf = x[g0+src]
			}
			want := []float32{sum, mx, pre, shuf, x[g0+3]}
			for k, w := range want {
				if got[i*5+k] != w {
					t.Fatalf("thread %d op %d: %v, want %v", i, k, got[i*5+k], w)
				}
			}
		}
	})

	t.Run("simdgroup_matrix", func(t *testing.T) {
		a := make([]float32, 64)
		b := make([]float32, 64)
		for i := range a {
			a[i] = float32(i%9) - 4
			b[i] = float32(i%5) * 0.5
		}
		c := make([]byte, 64*4)
		if err := e.Dispatch("mma8", [3]int{1, 1, 1}, [3]int{32, 1, 1}, map[int][]byte{0: bytesOf(a), 1: bytesOf(b), 2: c}); err != nil {
			t.Fatal(err)
		}
		got := f32s(c)
		for i := 0; i < 8; i++ {
			for j := 0; j < 8; j++ {
				var w float32
				for k := 0; k < 8; k++ {
					w += a[i*8+k] * b[k*8+j]
				}
				if got[i*8+j] != w {
					t.Fatalf("C[%d][%d] = %v, want %v", i, j, got[i*8+j], w)
				}
			}
		}
	})

	t.Run("atomics_half_bfloat", func(t *testing.T) {
		const n = 100
		x := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(x[i*4:], uint32(i*i))
		}
		h := make([]byte, 16)
		hv := make([]byte, 2*n)
		bv := make([]byte, 2*n)
		if err := e.Dispatch("hist", [3]int{4, 1, 1}, [3]int{25, 1, 1}, map[int][]byte{0: x, 1: h, 2: hv, 3: bv}); err != nil {
			t.Fatal(err)
		}
		var want [4]uint32
		for i := 0; i < n; i++ {
			want[(i*i)%4]++
		}
		for k := 0; k < 4; k++ {
			if got := binary.LittleEndian.Uint32(h[k*4:]); got != want[k] {
				t.Fatalf("bin %d: %d, want %d", k, got, want[k])
			}
		}
		// bfloat keeps 8 significant bits: relative error at most 2^-8 after round-to-nearest.
		for i := 0; i < n; i++ {
			v := float64(i*i) / 3
			got := float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(bv[i*2:])) << 16))
			if math.Abs(got-v) > v*math.Pow(2, -8)+1e-30 {
				t.Fatalf("bfloat(%v) = %v", v, got)
			}
		}
	})

	t.Run("shared_buffers", func(t *testing.T) {
		// tg_sum over windows of one shared buffer: inputs at byte 64, sums at byte 64+4·256.
		b, err := e.NewBuffer(64 + 4*256 + 4*2)
		if err != nil {
			t.Fatal(err)
		}
		defer e.FreeBuffer(b)
		x := make([]float32, 256)
		for i := range x {
			x[i] = float32(i % 5)
		}
		copy(b.Bytes()[64:], bytesOf(x))
		in := Arg{Slot: 0, Buf: b, Off: 64, Len: 4 * 256}
		out := Arg{Slot: 1, Buf: b, Off: 64 + 4*256, Len: 8}
		for _, s := range Schedules {
			if err := e.Run("tg_sum", [3]int{2, 1, 1}, [3]int{128, 1, 1}, []Arg{in, out}, s); err != nil {
				t.Fatal(err)
			}
			got := f32s(b.Bytes()[64+4*256:])
			var w0, w1 float32
			for i := range 128 {
				w0, w1 = w0+x[i], w1+x[128+i]
			}
			if got[0] != w0 || got[1] != w1 {
				t.Fatalf("schedule %v: sums %v, want [%v %v]", s, got, w0, w1)
			}
		}
		// A window one float short: the last threadgroup's read of its last input is out of bounds.
		short := Arg{Slot: 0, Buf: b, Off: 64, Len: 4*256 - 4}
		err = e.Run("tg_sum", [3]int{2, 1, 1}, [3]int{128, 1, 1}, []Arg{short, out}, Schedule{})
		if err == nil || !strings.Contains(err.Error(), "tg_sum") || !strings.Contains(err.Error(), "buffer 0 (x): element 255") {
			t.Fatalf("short window: %v", err)
		}
		if err := e.Run("tg_sum", [3]int{1, 1, 1}, [3]int{128, 1, 1}, []Arg{{Slot: 0, Buf: b, Off: 0, Len: 1 << 20}, out}, Schedule{}); err == nil {
			t.Fatal("a window past the buffer's end was accepted")
		}
	})

	t.Run("errors", func(t *testing.T) {
		if err := e.Dispatch("nope", [3]int{1, 1, 1}, [3]int{1, 1, 1}, nil); err == nil {
			t.Fatal("unknown kernel accepted")
		}
		if err := e.Dispatch("tg_sum", [3]int{1, 1, 1}, [3]int{1, 1, 1}, map[int][]byte{0: make([]byte, 4)}); err == nil {
			t.Fatal("missing buffer accepted")
		}
	})
}

func TestParseKernels(t *testing.T) {
	ks, err := ParseKernels(semantics)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 4 || ks[0].Name != "tg_sum" || len(ks[0].Params) != 5 || ks[0].Params[1].Buffer != 1 ||
		ks[0].Params[2].Builtin != "thread_position_in_threadgroup" {
		t.Fatalf("parsed %+v", ks)
	}
	if _, err := ParseKernels("kernel void bad(device float* x) {}"); err == nil {
		t.Fatal("parameter without attribute accepted")
	}
}
