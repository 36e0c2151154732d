package conformance

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/diff"
	"github.com/lily-engine/lily/metal"
	"github.com/lily-engine/lily/metal/device"
	"github.com/lily-engine/lily/metal/emu"
	"github.com/lily-engine/lily/ref"
)

// Helpers of the Metal-kernel conformance tests: one emulator per test binary run, buffer
// packing in the layouts the kernels document, and comparison against ref.

// groupSize is the quantization group the kernels hard-code (LILY_GROUP, as in the checkpoint).
const groupSize = 64

// dispatcher runs one kernel dispatch with buffers bound by index, updating them in place. The
// emulator is one; a device-backed implementation (darwin) can run the same subtests on a GPU.
type dispatcher interface {
	Dispatch(kernel string, grid, group [3]int, bufs map[int][]byte) error
}

// buildEmu compiles the kernel library once for the calling test and closes it when it ends.
func buildEmu(t *testing.T) *emu.Emulator {
	t.Helper()
	if testing.Short() {
		t.Skip("the Metal emulator compiles the kernels with g++ (~10 s) and runs them as fibers; skipped in -short")
	}
	e, err := emu.Build(map[string]string{"lily.metal": device.Source()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// kern is a dispatcher plus the test it reports to: failed dispatches fail the test.
type kern struct {
	t *testing.T
	e dispatcher
}

// libraryKernels names every kernel that device.Source defines.
func libraryKernels(t *testing.T) map[string]bool {
	ks, err := emu.ParseKernels(device.Source())
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, k := range ks {
		names[k.Name] = true
	}
	return names
}

// run dispatches kernel over grid threadgroups of group threads with bufs bound by index. On the
// emulator it runs under every schedule of emu.Schedules (SIMD groups and threadgroups in order,
// reversed and in two seeded random orders) and fails unless all leave identical bytes: a kernel
// that reads another SIMD group's writes without a barrier shows here. bufs get the in-order result.
func (k kern) run(kernel string, grid, group [3]int, bufs map[int][]byte) {
	k.t.Helper()
	k.runCanon(kernel, grid, group, bufs, nil)
}

// runCanon is run for a kernel whose output order legitimately depends on the schedule (atomics):
// canon rewrites a copy of each schedule's buffers into the form that must be identical.
func (k kern) runCanon(kernel string, grid, group [3]int, bufs map[int][]byte, canon func(map[int][]byte)) {
	k.t.Helper()
	e, ok := k.e.(*emu.Emulator)
	if !ok {
		if err := k.e.Dispatch(kernel, grid, group, bufs); err != nil {
			k.t.Fatal(err)
		}
		return
	}
	if err := sameUnderSchedules(e, kernel, grid, group, bufs, canon); err != nil {
		k.t.Fatal(err)
	}
}

// sameUnderSchedules runs the dispatch under each of emu.Schedules on copies of bufs, copies the
// first (in-order) result into bufs, and says where another schedule's bytes differ.
func sameUnderSchedules(e *emu.Emulator, kernel string, grid, group [3]int, bufs map[int][]byte, canon func(map[int][]byte)) error {
	in := map[int][]byte{}
	for slot, b := range bufs {
		in[slot] = append([]byte(nil), b...)
	}
	var want map[int][]byte
	for i, s := range emu.Schedules {
		got := map[int][]byte{}
		var args []emu.Arg
		for slot, b := range in {
			got[slot] = append([]byte(nil), b...)
			args = append(args, emu.Arg{Slot: slot, Bytes: got[slot]})
		}
		if err := e.Run(kernel, grid, group, args, s); err != nil {
			return fmt.Errorf("schedule %v: %w", s, err)
		}
		if i == 0 {
			for slot, b := range got {
				copy(bufs[slot], b)
			}
		}
		if canon != nil {
			canon(got)
		}
		if i == 0 {
			want = got
			continue
		}
		for slot, b := range got {
			if j := firstDiff(b, want[slot]); j >= 0 {
				return fmt.Errorf("%s: buffer %d differs at byte %d between schedules %v and %v (a race between SIMD groups or threadgroups)",
					kernel, slot, j, emu.Schedules[0], s)
			}
		}
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return len(a)
	}
	return -1
}

// f32 packs float32 values little-endian.
func f32(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// flat packs rows of float32 one after another.
func flat(rows [][]float32) []byte {
	var b []byte
	for _, r := range rows {
		b = append(b, f32(r)...)
	}
	return b
}

// unf32 reads float32 values back.
func unf32(b []byte) []float32 {
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
}

// rowsOf splits a flat buffer of float32 into rows of n values.
func rowsOf(b []byte, n int) [][]float32 {
	x := unf32(b)
	out := make([][]float32, len(x)/n)
	for i := range out {
		out[i] = x[i*n : (i+1)*n]
	}
	return out
}

// i32 packs int32 values; uni32 reads them back.
func i32(x []int32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

func uni32(b []byte) []int32 {
	x := make([]int32, len(b)/4)
	for i := range x {
		x[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
}

// dims packs a dims struct: int and uint32 fields as uint32, float32 and float64 as float32, in order.
func dims(fields ...any) []byte { return metal.PackDims(fields...) }

// zeros is n zero float32 values as bytes.
func zeros(n int) []byte { return make([]byte, 4*n) }

// qbufs returns copies of a quantized matrix's packed words, scales and biases.
func qbufs(m *checkpoint.Matrix) (w, s, b []byte) {
	if m.RowOffset != 0 || m.Bits == 0 {
		panic("qbufs: kernels take whole quantized tensors")
	}
	c := func(x []byte) []byte { return append([]byte(nil), x...) }
	return c(m.W.Data), c(m.Scales.Data), c(m.Biases.Data)
}

// bindQ binds a quantized matrix at buffers at, at+1, at+2 (words, scales, biases), each at the
// start of its buffer.
func bindQ(bufs map[int][]byte, at int, m *checkpoint.Matrix) {
	bufs[at], bufs[at+1], bufs[at+2] = qbufs(m)
}

// shiftCases are byte shifts of (words, scales, biases) for bindQShifted: aligned, and each operand
// at each of the three misaligned offsets a tensor of an unpadded MLX shard can start at.
var shiftCases = [][3]int{{0, 0, 0}, {1, 2, 3}, {2, 3, 1}, {3, 1, 2}}

// bindQShifted binds a quantized matrix as the engine binds a tensor that starts sh[i] bytes past a
// 4-byte boundary of its file: each buffer is sh[i] poison bytes, the tensor, and poison up to the
// next multiple of 4 (the loaders may read the whole last word, never further: the emulator's
// bounds checks fail a read past it). It returns the dims field sh = w | s<<8 | b<<16.
func bindQShifted(bufs map[int][]byte, at int, m *checkpoint.Matrix, sh [3]int) int {
	w, s, b := qbufs(m)
	for i, x := range [][]byte{w, s, b} {
		buf := bytes.Repeat([]byte{0xa5}, sh[i])
		buf = append(buf, x...)
		for len(buf)%4 != 0 {
			buf = append(buf, 0xa5)
		}
		bufs[at+i] = buf
	}
	return sh[0] | sh[1]<<8 | sh[2]<<16
}

// randVec is n normal values of standard deviation std.
func randVec(rng *rand.Rand, n int, std float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * std)
	}
	return v
}

// randRows is t rows of randVec.
func randRows(rng *rand.Rand, t, n int, std float64) [][]float32 {
	r := make([][]float32, t)
	for i := range r {
		r[i] = randVec(rng, n, std)
	}
	return r
}

// qmat quantizes a random [experts or 1, out, in] matrix with weights of std 1/sqrt(in).
func qmat(t *testing.T, rng *rand.Rand, name string, experts, out, in, bits int) checkpoint.Matrix {
	t.Helper()
	w := randVec(rng, max(experts, 1)*out*in, 1/math.Sqrt(float64(in)))
	m, err := ref.Quantize(name, w, experts, out, in, bits, groupSize)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// near fails the test when got and want differ beyond tol relative to want's scale (diff.ScaledErr).
func near(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i, v := range got {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("%s: value %d is %v", what, i, v)
		}
	}
	_, e := diff.ScaledErr(got, want)
	if e > tol {
		t.Fatalf("%s: relative error %.3g > %.3g", what, e, tol)
	}
	t.Logf("%s: relative error %.2g (tolerance %.2g)", what, e, tol)
}

// nearRows is near over rows.
func nearRows(t *testing.T, what string, got, want [][]float32, tol float64) {
	t.Helper()
	var g, w []float32
	for i := range want {
		g, w = append(g, got[i]...), append(w, want[i]...)
	}
	near(t, what, g, w, tol)
}

// ceil is ⌈a/b⌉.
func ceil(a, b int) int { return (a + b - 1) / b }
