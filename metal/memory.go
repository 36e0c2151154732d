package metal

import (
	"fmt"
	"unsafe"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/metal/device"
)

// Footprint is the device memory a model needs with one session at a context limit.
type Footprint struct {
	Ctx     int   // the context limit the KV cache is allocated to
	Weights int64 // the quantized weights' file spans and the float-vector arena
	KV      int64 // K and V of every attention layer at Ctx tokens (fp16)
	State   int64 // the DeltaNet conv and recurrent state
	Buffers int64 // one session's activations, inputs and readback, and the prefill logits buffer
	// Largest is the largest single buffer, and LargestWhat names it.
	Largest     int64
	LargestWhat string
}

// Total is everything the model needs on the device.
func (f Footprint) Total() int64 { return f.Weights + f.KV + f.State + f.Buffers }

// KVBytes is the KV cache of every attention layer of cfg at ctx tokens: keys and values as fp16.
func KVBytes(cfg *checkpoint.Config, ctx int) int64 {
	d := cfg.Dims()
	return int64(d.Count(checkpoint.FullAttention)) * 2 * int64(ctx) * kvElem * int64(d.KVWidth())
}

// footprint computes what e needs for w on the device (e's sizes, context, chunk and top-k set).
func (e *Model) footprint(w *checkpoint.Weights) Footprint {
	var weights, largest int64
	var what string
	type extent struct{ lo, hi uintptr }
	files := map[string]*extent{}
	quantTensors(w, func(t *checkpoint.Tensor) {
		a := uintptr(unsafe.Pointer(unsafe.SliceData(t.Data)))
		if t.File == "" || len(t.Data) == 0 {
			weights += int64(len(t.Data))
			return
		}
		x := files[t.File]
		if x == nil {
			x = &extent{lo: a, hi: a}
			files[t.File] = x
		}
		x.lo, x.hi = min(x.lo, a), max(x.hi, a+uintptr(len(t.Data)))
	})
	for name, x := range files {
		weights += int64(x.hi - x.lo)
		if n := int64(x.hi - x.lo); n > largest {
			largest, what = n, "weights of "+name
		}
	}
	for _, v := range vectors(w) {
		weights += int64(4*len(v)+255) &^ 255
	}
	return e.footprintWith(weights, largest, what)
}

// footprintWith is the footprint of weights bytes of weights (the largest single buffer of them
// largest bytes, named what) with e's sizes, context, chunk and top-k.
func (e *Model) footprintWith(weights, largest int64, what string) Footprint {
	f := Footprint{Ctx: e.maxCtx, KV: KVBytes(e.cfg, e.maxCtx), Weights: weights, Largest: largest, LargestWhat: what}
	big := func(n int64, what string) {
		if n > f.Largest {
			f.Largest, f.LargestWhat = n, what
		}
	}
	s := &e.sizes
	f.State = 4 * int64(s.dims.Count(checkpoint.LinearAttention)) * int64(s.dims.DeltaNetState())
	if f.KV > 0 {
		big(int64(e.maxCtx)*kvElem*int64(s.dims.KVWidth()), fmt.Sprintf("KV cache of one layer at %d tokens", e.maxCtx))
	}
	_, p, io := e.scratchLayout()
	all := int64(4 * e.chunk * s.v)
	f.Buffers = int64(p.n+io.n) + all
	big(int64(p.n), "activations")
	big(all, "prefill logits")
	return f
}

// Prefill chunk sizes: a chunk reads every expert's weights once (nearly every expert is routed
// some of its tokens), so chunks of maxChunk tokens read them 16× less often than chunks of 128.
// The activations of a chunk (its MoE slots [t·k, H] above all) and the every-position logits
// [t, V] grow with it: sizeChunk halves it, down to minChunk, until the footprint fits the device.
const (
	maxChunk = 2048
	minChunk = 128
)

// sizeChunk sets e.chunk to the largest of maxChunk, maxChunk/2, …, minChunk (none above the
// context limit) whose footprint foot() fits lim, and returns that footprint; where even minChunk
// does not fit, the error of checkMemory for it.
func (e *Model) sizeChunk(foot func() Footprint, lim device.Limits) (Footprint, error) {
	c := max(1, min(maxChunk, e.maxCtx))
	for {
		e.chunk = c
		f := foot()
		err := checkMemory(f, lim)
		if err == nil || c <= minChunk {
			return f, err
		}
		c = max(c/2, minChunk)
	}
}

// checkMemory refuses a footprint that does not fit the device's limits, naming the numbers and
// what to change.
func checkMemory(f Footprint, lim device.Limits) error {
	if lim.MaxBufferLength > 0 && f.Largest > lim.MaxBufferLength {
		return fmt.Errorf("metal: the %s needs one buffer of %s, over the device's maxBufferLength of %s; "+
			"lower --ctx-size, or use a checkpoint in smaller shards", f.LargestWhat, gib(f.Largest), gib(lim.MaxBufferLength))
	}
	if lim.WorkingSet > 0 && f.Total() > lim.WorkingSet {
		per1K := KVPer1K(f)
		mb := (f.Total()+lim.WorkingSet/8)>>20 + 1 // the need plus headroom for the OS's own GPU use
		return fmt.Errorf("metal: the model needs %s on the GPU (weights %s, KV cache at --ctx-size %d %s, "+
			"recurrent state %s, buffers %s) but the GPU's recommended working set (recommendedMaxWorkingSetSize) is %s: "+
			"lower --ctx-size (the KV cache takes %s per 1,024 tokens), or raise the GPU's wired memory limit with "+
			"`sudo sysctl iogpu.wired_limit_mb=%d` (resets at reboot; leave the OS several GB)",
			gib(f.Total()), gib(f.Weights), f.Ctx, gib(f.KV), gib(f.State), gib(f.Buffers), gib(lim.WorkingSet),
			gib(per1K), mb)
	}
	return nil
}

// KVPer1K is the KV cache per 1,024 tokens of context in f.
func KVPer1K(f Footprint) int64 {
	if f.Ctx == 0 {
		return 0
	}
	return f.KV * 1024 / int64(f.Ctx)
}

// gib formats a byte count with its GiB.
func gib(n int64) string { return fmt.Sprintf("%d bytes (%.2f GiB)", n, float64(n)/(1<<30)) }
