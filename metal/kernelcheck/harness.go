package kernelcheck

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/safetensors"
	"github.com/lily-engine/lily/metal/device"
	"github.com/lily-engine/lily/metal/emu"
	"github.com/lily-engine/lily/ref"
)

// checker is what one KernelCheck runs with: the device, the real model's configuration, a seeded
// random source, and the comparisons made so far (the worst relative error and what exceeded its
// budget).
type checker struct {
	dev      device.Device
	cfg      *checkpoint.Config
	rng      *rand.Rand
	constant map[string]map[int]bool // kernel → buffer slots declared `constant` (bound inline)
	worst    float64
	fails    []string
}

// run dispatches kernel over grid threadgroups of group threads with bufs[i] at [[buffer(i)]]:
// constant slots inline, every other slot a fresh device buffer uploaded from and downloaded back
// into bufs[i], so the caller reads what the kernel wrote in place.
func (c *checker) run(kernel string, grid, group [3]int, bufs map[int][]byte) error {
	slots := make([]int, 0, len(bufs))
	for s := range bufs {
		slots = append(slots, s)
	}
	sort.Ints(slots)
	args := make([]device.Arg, slots[len(slots)-1]+1)
	var allocated []device.Buffer
	defer func() {
		for _, b := range allocated {
			c.dev.Free(b)
		}
	}()
	for _, s := range slots {
		if c.constant[kernel][s] {
			args[s] = device.Arg{Bytes: bufs[s]}
			continue
		}
		b, err := c.dev.Alloc(len(bufs[s]), device.Shared)
		if err != nil {
			return fmt.Errorf("%s: buffer %d: %w", kernel, s, err)
		}
		allocated = append(allocated, b)
		if err := c.dev.Upload(b, 0, bufs[s]); err != nil {
			return fmt.Errorf("%s: buffer %d: %w", kernel, s, err)
		}
		args[s] = device.Arg{Buf: b}
	}
	err := c.dev.Run([]device.Command{&device.Dispatch{Kernel: kernel, Groups: grid, Threads: group, Args: args}})
	if err != nil {
		return fmt.Errorf("%s: %w", kernel, err)
	}
	for _, s := range slots {
		if args[s].Buf != nil {
			if err := c.dev.Download(bufs[s], args[s].Buf, 0); err != nil {
				return fmt.Errorf("%s: buffer %d: %w", kernel, s, err)
			}
		}
	}
	return nil
}

// threads is the threadgroup size for a kernel that takes any whole number of SIMD groups up to
// want: want, or the pipeline's limit on this device rounded down to SIMD groups.
func (c *checker) threads(kernel string, want int) (int, error) {
	limit, err := c.dev.MaxThreads(kernel)
	if err != nil {
		return 0, err
	}
	return max(min(want, limit)/32*32, 32), nil
}

// near records got against want: the relative error (relErr) joins worst, and one above tol, a
// length mismatch or a non-finite value is a failure named by what.
func (c *checker) near(what string, got, want []float32, tol float64) {
	if len(got) != len(want) {
		c.fails = append(c.fails, fmt.Sprintf("%s: %d values, want %d", what, len(got), len(want)))
		return
	}
	for i, v := range got {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			c.fails = append(c.fails, fmt.Sprintf("%s: value %d is %v", what, i, v))
			c.worst = math.Inf(1)
			return
		}
	}
	e := relErr(got, want)
	c.worst = max(c.worst, e)
	if e > tol {
		c.fails = append(c.fails, fmt.Sprintf("%s: relative error %.3g > %.3g", what, e, tol))
	}
}

// exact records a mismatch of integer results (ids, offsets) as a failure.
func (c *checker) exact(what string, got, want []int32) {
	if len(got) != len(want) {
		c.fails = append(c.fails, fmt.Sprintf("%s: %d values, want %d", what, len(got), len(want)))
		return
	}
	for i := range want {
		if got[i] != want[i] {
			c.fails = append(c.fails, fmt.Sprintf("%s: [%d] = %d, want %d", what, i, got[i], want[i]))
			return
		}
	}
}

// err is the failures so far as one error, or nil.
func (c *checker) err() error {
	if len(c.fails) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(c.fails, "; "))
}

// relErr is max_i |got[i] − want[i]| / max_i |want[i]|: the error relative to the result's scale.
func relErr(got, want []float32) float64 {
	var d, s float64
	for i := range want {
		d = max(d, math.Abs(float64(got[i])-float64(want[i])))
		s = max(s, math.Abs(float64(want[i])))
	}
	if s == 0 {
		return d
	}
	return d / s
}

// constantSlots maps each kernel of the library to its `constant` buffer slots.
func constantSlots() (map[string]map[int]bool, error) {
	ks, err := emu.ParseKernels(device.Source())
	if err != nil {
		return nil, err
	}
	out := map[string]map[int]bool{}
	for _, k := range ks {
		out[k.Name] = map[int]bool{}
		for _, p := range k.Params {
			if p.Buffer >= 0 && strings.HasPrefix(strings.TrimSpace(p.Type), "constant") {
				out[k.Name][p.Buffer] = true
			}
		}
	}
	return out, nil
}

// Packing in the layouts the kernels document.

func f32s(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func flatRows(rows [][]float32) []byte {
	var b []byte
	for _, r := range rows {
		b = append(b, f32s(r)...)
	}
	return b
}

func unf32s(b []byte) []float32 {
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
}

func i32s(x []int32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

func uni32s(b []byte) []int32 {
	x := make([]int32, len(b)/4)
	for i := range x {
		x[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
}

func f16s(x []float32) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], safetensors.Float32ToF16(v))
	}
	return b
}

func unf16s(b []byte) []float32 {
	x := make([]float32, len(b)/2)
	for i := range x {
		x[i] = safetensors.F16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return x
}

// roundF16 is x as the fp16 KV cache stores it.
func roundF16(x []float32) []float32 { return unf16s(f16s(x)) }

func zeroF32(n int) []byte { return make([]byte, 4*n) }

// bindShifted binds a whole quantized matrix at buffers at, at+1, at+2 (words, scales, biases) as
// the engine binds tensors of an unpadded MLX shard: each starts sh[i] bytes past a 4-byte
// boundary, after poison bytes, and ends padded to a whole word. It returns the dims field
// w | s<<8 | b<<16 the kernels read the shifts from.
func bindShifted(bufs map[int][]byte, at int, m *checkpoint.Matrix, sh [3]int) int {
	for i, x := range [][]byte{m.W.Data, m.Scales.Data, m.Biases.Data} {
		buf := bytes.Repeat([]byte{0xa5}, sh[i])
		buf = append(buf, x...)
		for len(buf)%4 != 0 {
			buf = append(buf, 0xa5)
		}
		bufs[at+i] = buf
	}
	return sh[0] | sh[1]<<8 | sh[2]<<16
}

// Random data.

func (c *checker) vec(n int, std float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(c.rng.NormFloat64() * std)
	}
	return v
}

func (c *checker) rows(t, n int, std float64) [][]float32 {
	r := make([][]float32, t)
	for i := range r {
		r[i] = c.vec(n, std)
	}
	return r
}

// qmat quantizes a random [experts or 1, out, in] matrix with weights of std 1/sqrt(in).
func (c *checker) qmat(name string, experts, out, in, bits int) (checkpoint.Matrix, error) {
	w := c.vec(max(experts, 1)*out*in, 1/math.Sqrt(float64(in)))
	return ref.Quantize(name, w, experts, out, in, bits, quantGroup)
}

// normWeight is an MLX-style norm multiplier near 1 (bf16(1 + w)).
func (c *checker) normWeight(n int) []float32 {
	v := c.vec(n, 0.1)
	for i := range v {
		v[i] = safetensors.BF16ToFloat32(safetensors.Float32ToBF16(v[i] + 1))
	}
	return v
}

// quantGroup is the quantization group the kernels hard-code (LILY_GROUP, as in the checkpoint).
const quantGroup = 64
