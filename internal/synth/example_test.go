package synth_test

import (
	"fmt"

	"github.com/lily-engine/lily/internal/synth"
)

// A plan lists the real checkpoint's shards and sizes without writing anything.
func ExampleNewPlan() {
	c, err := synth.Preset("qwen3.6-35b-a3b")
	if err != nil {
		panic(err)
	}
	p, err := synth.NewPlan(c, synth.LayoutMLX, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(p.Shards), "shards,", p.NumTensors(), "tensors,", p.TotalBytes(), "bytes")
	// Output: 4 shards, 1757 tensors, 19508787456 bytes
}
