package cpu_test

import (
	"fmt"

	"github.com/lily-engine/lily/fast/cpu"

	"github.com/lily-engine/lily/internal/safetensors"
)

// A 4-bit matrix of one row, one group: every q is 3, scale 0.5, bias -1, so every weight is 0.5.
func Example() {
	p := cpu.NewPool(2)
	defer p.Close()
	k := cpu.New(p) // SIMD when built with GOEXPERIMENT=simd on an AVX2+FMA CPU

	m := &cpu.QMat{Bits: 4, Out: 1, In: 64, W: make([]byte, 32),
		Scales: []uint16{safetensors.Float32ToBF16(0.5)}, Biases: []uint16{safetensors.Float32ToBF16(-1)}}
	for i := range m.W {
		m.W[i] = 0x33 // two nibbles of 3
	}
	x := make([]float32, 64)
	for i := range x {
		x[i] = 2
	}
	v := cpu.NewVec(64)
	v.PrepareQ16(x) // once per input vector, shared by every mat-vec that reads it
	y := make([]float32, 1)
	k.QMatVec(y, m, v)
	fmt.Println(y[0]) // Σ 0.5·2 over 64 inputs
	k.QMatVecQ16(y, m, v)
	fmt.Println(y[0]) // 2 is exact in int8 (127 steps of 2/127)
	// Output:
	// 64
	// 64
}
