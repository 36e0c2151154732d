package device

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWritableType(t *testing.T) {
	for typ, want := range map[string]bool{
		"device float*": true, "device atomic_uint*": true, "device const float*": false,
		"const device uint*": false, "constant NormDims&": false, "device int*": true,
	} {
		assert.Equal(t, want, writableType(typ), typ)
	}
}

// TestAccessOfSource checks the access table on kernels whose signatures are known: rms_norm
// writes only y (slot 2), swiglu writes g in place (slot 0).
func TestAccessOfSource(t *testing.T) {
	acc, err := NewAccess(Source())
	require.NoError(t, err)
	for i, w := range []bool{false, false, true, false} {
		assert.Equal(t, w, acc.writable("rms_norm", i), "rms_norm slot %d", i)
	}
	assert.True(t, acc.writable("swiglu", 0))
	assert.False(t, acc.writable("swiglu", 1))
	assert.True(t, acc.writable("no_such_kernel", 0), "unknown kernels are taken to write")
}

// norm is an rms_norm dispatch from window x to window y of plain buffers.
func norm(x, w, y Arg) *Dispatch {
	return &Dispatch{Kernel: "rms_norm", Groups: [3]int{1, 1, 1}, Threads: [3]int{32, 1, 1},
		Args: []Arg{x, w, y, {Bytes: []byte{8, 0, 0, 0, 0, 0, 0, 0}}}}
}

func kinds(ops []Op, k OpKind) []int {
	var at []int
	for _, o := range ops {
		if o.Kind == k {
			at = append(at, o.Cmd)
		}
	}
	return at
}

func TestEncodeBarriers(t *testing.T) {
	acc, err := NewAccess(Source())
	require.NoError(t, err)
	a, b, w := &emuBuffer{mem: make([]byte, 256)}, &emuBuffer{mem: make([]byte, 256)}, &emuBuffer{mem: make([]byte, 32)}
	win := func(buf *emuBuffer, off int) Arg { return Arg{Buf: buf, Off: off, Len: 32} }
	wa := Arg{Buf: w}
	cases := []struct {
		name string
		cmds []Command
		want []int // commands preceded by a barrier
	}{
		{"read after write", []Command{norm(win(a, 0), wa, win(b, 0)), norm(win(b, 0), wa, win(a, 64))}, []int{1}},
		{"two readers of one input", []Command{norm(win(a, 0), wa, win(b, 0)), norm(win(a, 0), wa, win(b, 32))}, nil},
		{"write after read", []Command{norm(win(a, 0), wa, win(b, 0)), norm(win(b, 64), wa, win(a, 16))}, []int{1}},
		{"write after write", []Command{norm(win(a, 0), wa, win(b, 0)), norm(win(a, 64), wa, win(b, 16))}, []int{1}},
		{"disjoint windows of one buffer", []Command{norm(win(a, 0), wa, win(b, 0)), norm(win(a, 64), wa, win(b, 32))}, nil},
		{"barrier resets the set", []Command{norm(win(a, 0), wa, win(b, 0)), norm(win(b, 0), wa, win(a, 64)),
			norm(win(a, 128), wa, win(b, 64)), norm(win(b, 0), wa, win(a, 192))}, []int{1}},
		{"chain", []Command{norm(win(a, 0), wa, win(b, 0)), norm(win(b, 0), wa, win(a, 64)),
			norm(win(a, 64), wa, win(b, 64))}, []int{1, 2}},
		{"a blit pass orders", []Command{norm(win(a, 0), wa, win(b, 0)), &Copy{Src: b, Dst: a, DstOff: 128, N: 32},
			norm(win(a, 128), wa, win(b, 32))}, nil},
	}
	for _, c := range cases {
		require.NoError(t, Check(c.cmds), c.name)
		ops := Encode(c.cmds, acc, Split{})
		assert.Equal(t, c.want, kinds(ops, OpBarrier), c.name)
	}
}

func TestEncodeBindsOnlyChanges(t *testing.T) {
	acc, err := NewAccess(Source())
	require.NoError(t, err)
	a, b, w := &emuBuffer{mem: make([]byte, 256)}, &emuBuffer{mem: make([]byte, 256)}, &emuBuffer{mem: make([]byte, 32)}
	x, y, wa := Arg{Buf: a, Len: 32}, Arg{Buf: b, Len: 32}, Arg{Buf: w}
	cmds := []Command{norm(x, wa, y), norm(x, wa, y), norm(x, wa, Arg{Buf: b, Off: 32, Len: 32})}
	ops := Encode(cmds, acc, Split{})
	var got []Op
	for _, o := range ops {
		if o.Kind == OpSetBuffers || o.Kind == OpSetBytes || o.Kind == OpSetPipeline {
			got = append(got, Op{Kind: o.Kind, Cmd: o.Cmd, Slot: o.Slot, N: o.N})
		}
	}
	assert.Equal(t, []Op{
		{Kind: OpSetPipeline, Cmd: 0}, {Kind: OpSetBuffers, Cmd: 0, Slot: 0, N: 3}, {Kind: OpSetBytes, Cmd: 0, Slot: 3},
		{Kind: OpSetBuffers, Cmd: 2, Slot: 2, N: 1},
	}, got)
	c := Count(ops)
	assert.Equal(t, 3, c.Dispatches)
	assert.Equal(t, 1, c.CommandBuffers)
	assert.Equal(t, 1, c.Barriers, "the second dispatch writes what the first wrote")
	assert.LessOrEqual(t, c.Calls, CallBound(c.Dispatches, c.CommandBuffers))
}

func TestEncodeSplit(t *testing.T) {
	acc, err := NewAccess(Source())
	require.NoError(t, err)
	a, w := &emuBuffer{mem: make([]byte, 4096)}, &emuBuffer{mem: make([]byte, 32)}
	var cmds []Command
	for i := range 40 {
		cmds = append(cmds, norm(Arg{Buf: a, Off: 64 * i, Len: 32}, Arg{Buf: w}, Arg{Buf: a, Off: 64*i + 32, Len: 32}))
	}
	ops := Encode(cmds, acc, Split{First: 4, Every: 16})
	assert.Equal(t, []int{0, 4, 20, 36}, kinds(ops, OpCommandBuffer), "first commit after 4 dispatches, then every 16")
	c := Count(ops)
	assert.Equal(t, 4, c.CommandBuffers)
	assert.Equal(t, 4, c.ByKind[OpCommit])
	assert.Equal(t, 4, c.ByKind[OpWait])
	assert.Equal(t, 4, c.ByKind[OpSetPipeline], "a new pass binds the pipeline again")
	// Every commit closes its pass first.
	for i, o := range ops {
		if o.Kind == OpCommit {
			assert.Equal(t, OpEndEncoding, ops[i-1].Kind)
		}
	}
}

// TestEmuHonoursBarriers runs a two-step chain (rms_norm x → y, then y → z) on the emulator: with
// the encoding's barrier every seeded order gives list order's result; with the barrier dropped
// the dispatches share one concurrent group, some order runs the reader first and z comes out
// wrong, which is what a missing barrier does on a GPU.
func TestEmuHonoursBarriers(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the kernels with g++; skipped in -short")
	}
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("the Metal kernel emulator needs g++, which is not installed")
	}
	dev, err := NewEmuDeviceOptions(EmuOptions{Threads: 1})
	require.NoError(t, err)
	defer dev.Close()
	const n = 64
	alloc := func() Buffer {
		b, err := dev.Alloc(4*n, Shared)
		require.NoError(t, err)
		return b
	}
	x, w, y, z := alloc(), alloc(), alloc(), alloc()
	in := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(float32(i%7)-2.5))
	}
	require.NoError(t, dev.Upload(x, 0, in))
	for i := range n {
		binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(0.5+float32(i%3)))
	}
	require.NoError(t, dev.Upload(w, 0, in))
	dims := make([]byte, 8)
	binary.LittleEndian.PutUint32(dims, n)
	binary.LittleEndian.PutUint32(dims[4:], math.Float32bits(1e-6))
	step := func(src, dst Buffer) *Dispatch {
		return &Dispatch{Kernel: "rms_norm", Groups: [3]int{1, 1, 1}, Threads: [3]int{64, 1, 1},
			Args: []Arg{{Buf: src}, {Buf: w}, {Buf: dst}, {Bytes: dims}}}
	}
	cmds := []Command{step(x, y), step(y, z)}
	run := func(ops []Op) []byte {
		zero := make([]byte, 4*n)
		require.NoError(t, dev.Upload(y, 0, zero))
		require.NoError(t, dev.Upload(z, 0, zero))
		require.NoError(t, dev.runOps(cmds, ops))
		out := make([]byte, 4*n)
		require.NoError(t, dev.Download(out, z, 0))
		return out
	}
	ops := Encode(cmds, dev.acc, DefaultSplit())
	require.Equal(t, []int{1}, kinds(ops, OpBarrier))
	dev.opt.InOrder = true
	want := run(ops)
	dev.opt.InOrder = false
	var dropped []Op
	for _, o := range ops {
		if o.Kind != OpBarrier {
			dropped = append(dropped, o)
		}
	}
	wrong := 0
	for seed := range uint64(8) {
		dev.rng = rand.New(rand.NewPCG(seed, 1))
		assert.Equal(t, want, run(ops), "seed %d with the barrier", seed)
		if !bytes.Equal(want, run(dropped)) {
			wrong++
		}
	}
	assert.Positive(t, wrong, "no seeded order showed the missing barrier")
}
