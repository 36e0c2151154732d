// Package perfmodel is the roofline performance model of the Metal engine: for every kernel of a
// decode step and of a prefill chunk, the bytes it moves and the FLOPs it does per token, and the
// time a machine of given bandwidth and compute peak needs for them.
package perfmodel

import (
	"errors"
	"strings"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// The performance model: for every kernel of a decode step and of a prefill chunk, the bytes it
// moves and the FLOPs it does per token, and the time a roofline machine needs for them
// (max(bytes/bandwidth, FLOPs/peak) per kernel). It is a lower bound on time: it assumes every
// operand crosses device memory once per dispatch (tiles re-read by other threadgroups come from
// cache), and it ignores launch gaps, occupancy, dequantization ALU work and the sequential
// dependence of the DeltaNet scan. docs/metal-performance.md is generated from it.

// Machine is a GPU's two roofline limits.
type Machine struct {
	Name      string
	Bandwidth float64 // bytes/s of streaming device-memory traffic
	Peak      float64 // FLOP/s of the matrix units (fp16)
}

// M5Max is Apple's M5 Max as the model assumes it: 577 GB/s, ~58 TFLOPS fp16.
func M5Max() Machine { return Machine{Name: "Apple M5 Max", Bandwidth: 577e9, Peak: 58e12} }

// Lily's published figures on an M5 Max (tokens/s): decode, and prefill of a 1K-token prompt.
const (
	PublishedDecodeTokS  = 170
	PublishedPrefillTokS = 4156
)

// Cost is what one step of the forward pass (one kernel, summed over its dispatches) moves and
// computes per token. Bytes are split by kind so they can be checked against the checkpoint.
type Cost struct {
	Step   string // where in the forward pass
	Kernel string // the kernel's name in kernels/*.metal
	Calls  int    // dispatches per decode step, or per prefill chunk

	Weights float64 // stored weight bytes read (packed words, scales, biases; bf16 vectors)
	Widened float64 // extra bytes of bf16 vectors the kernels read as float32 (norms, conv, gates)
	Act     float64 // float32 activations read and written
	State   float64 // DeltaNet recurrent and conv state read and written
	KV      float64 // KV cache read and written
	FLOPs   float64
}

// Bytes is all the memory traffic of c.
func (c Cost) Bytes() float64 { return c.Weights + c.Widened + c.Act + c.State + c.KV }

// Seconds is c's roofline time on m.
func (m Machine) Seconds(c Cost) float64 { return max(c.Bytes()/m.Bandwidth, c.FLOPs/m.Peak) }

// Total is the summed roofline time of costs on m.
func (m Machine) Total(costs []Cost) float64 {
	var s float64
	for _, c := range costs {
		s += m.Seconds(c)
	}
	return s
}

// model is what the costs are computed from: the config's sizes (checkpoint.Dims) and its weights'
// storage.
type model struct {
	checkpoint.Dims
	bits, routerBits, group float64 // bits 0: bf16
}

func newModel(c *checkpoint.Config) (model, error) {
	if c.NumExperts <= 0 || c.NumExpertsPerTok <= 0 || c.HiddenSize <= 0 {
		return model{}, errors.New("perfmodel: config lacks experts or hidden size")
	}
	d := model{Dims: c.Dims()}
	if q := c.Quant; q != nil {
		d.bits, d.routerBits, d.group = float64(q.Bits), float64(q.Bits), float64(q.GroupSize)
		for path, p := range q.Overrides { // the router's own bits (8 in the MLX checkpoint)
			if strings.HasSuffix(path, "mlp.gate") {
				d.routerBits = float64(p.Bits)
			}
		}
	}
	return d, nil
}

// fl is a size as the costs' float64.
func fl(n int) float64 { return float64(n) }

// mat is the stored bytes of an [out, in] matrix of the given bits: packed words plus bf16 scale
// and bias per group, or bf16 when unquantized.
func (d model) mat(out, in, bits float64) float64 {
	if bits == 0 {
		return 2 * out * in
	}
	return out*in*bits/8 + 4*out*in/d.group
}

// vec is a bf16 vector of n values read as float32: its stored bytes and the widening.
func modelVec(c Cost, n float64) Cost {
	c.Weights += 2 * n
	c.Widened += 2 * n
	return c
}

// times scales a per-layer cost to n layers.
func times(c Cost, n int) Cost {
	f := float64(n)
	c.Calls *= n
	c.Weights, c.Widened, c.Act, c.State, c.KV, c.FLOPs = f*c.Weights, f*c.Widened, f*c.Act, f*c.State, f*c.KV, f*c.FLOPs
	return c
}

// perToken divides a chunk's cost by its T tokens.
func perToken(c Cost, T float64) Cost {
	c.Weights, c.Widened, c.Act, c.State, c.KV, c.FLOPs = c.Weights/T, c.Widened/T, c.Act/T, c.State/T, c.KV/T, c.FLOPs/T
	return c
}

// Predict is the model's decode tok/s at a context of n tokens and prefill tok/s for an n-token
// prompt (one chunk) on m: what a measured run of lily bench can be compared with.
func Predict(m Machine, cfg *checkpoint.Config, n int) (decodeTokS, prefillTokS float64, err error) {
	dec, err := DecodeCosts(cfg, n)
	if err != nil {
		return 0, 0, err
	}
	pre, err := PrefillCosts(cfg, n)
	if err != nil {
		return 0, 0, err
	}
	return 1 / m.Total(dec), 1 / m.Total(pre), nil
}

// Expected is the performance model's prediction for a device of measured bandwidth bw (bytes/s)
// and assumed compute peak (FLOP/s): decode and prefill tok/s at prompt length n.
func Expected(cfg *checkpoint.Config, bw, peak float64, n int) (decodeTokS, prefillTokS float64, err error) {
	return Predict(Machine{Name: "measured", Bandwidth: bw, Peak: peak}, cfg, n)
}
