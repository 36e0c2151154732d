package device

import (
	"encoding/binary"
	"fmt"
)

// ABIProbe runs the abi_probe kernel over an odd grid (3×5 threadgroups of 7×3 threads, so SIMD
// groups are partial) bound at a non-zero offset of a buffer filled with a sentinel, and checks
// every thread's report and that no byte outside the window changed. It is what `lily doctor`
// runs first on a device: a mismatch means the kernels' assumptions about builtins, buffer
// offsets or inline constants do not hold there.
func ABIProbe(dev Device) error {
	const gx, gy, tx, ty, off, sentinel = 3, 5, 7, 3, 256, 0xA5A5A5A5
	w, h := gx*tx, gy*ty
	n := off + 16*w*h + off
	buf, err := dev.Alloc(n, Shared)
	if err != nil {
		return fmt.Errorf("abi probe: %w", err)
	}
	defer dev.Free(buf)
	fill := make([]byte, n)
	for i := 0; i < n; i += 4 {
		binary.LittleEndian.PutUint32(fill[i:], sentinel)
	}
	if err := dev.Upload(buf, 0, fill); err != nil {
		return fmt.Errorf("abi probe: %w", err)
	}
	dims := make([]byte, 16)
	for i, v := range []uint32{gx, gy, tx, ty} {
		binary.LittleEndian.PutUint32(dims[4*i:], v)
	}
	err = dev.Run([]Command{&Dispatch{Kernel: "abi_probe", Groups: [3]int{gx, gy, 1}, Threads: [3]int{tx, ty, 1},
		Args: []Arg{{Buf: buf, Off: off, Len: 16 * w * h}, {Bytes: dims}}}})
	if err != nil {
		return fmt.Errorf("abi probe: %w", err)
	}
	got := make([]byte, n)
	if err := dev.Download(got, buf, 0); err != nil {
		return fmt.Errorf("abi probe: %w", err)
	}
	for i := 0; i < n; i += 4 {
		if (i < off || i >= off+16*w*h) && binary.LittleEndian.Uint32(got[i:]) != sentinel {
			return fmt.Errorf("abi probe: byte %d outside the window [%d, %d) was written", i, off, off+16*w*h)
		}
	}
	for y := range h {
		for x := range w {
			r := got[off+16*(y*w+x):]
			tpx, tpy := x%tx, y%ty
			want := [4]uint32{uint32(x), uint32(y), uint32(x) | uint32(y)<<16, uint32(tpy*tx+tpx) % 32}
			for k, v := range want {
				if g := binary.LittleEndian.Uint32(r[4*k:]); g != v {
					return fmt.Errorf("abi probe: thread (%d, %d) field %d is %d, want %d", x, y, k, g, v)
				}
			}
		}
	}
	return nil
}
