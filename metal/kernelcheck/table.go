// Package kernelcheck is lily doctor's per-kernel table: every kernel of the Metal library run at
// the real model's sizes on random data on a device and compared with ref's numerics (or an exact
// Go computation) within its budget (metal/budget). It is the one package of the metal family that
// imports ref — the oracle — and the engine (package metal) does not import it; cmd/lily does.
package kernelcheck

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/synth"
	"github.com/lily-engine/lily/metal/budget"
	"github.com/lily-engine/lily/metal/device"
)

// KernelCheck is one entry of `lily doctor`'s per-kernel table: the library kernels it covers,
// run at the real model's sizes on random data and compared with ref (or an exact Go
// computation) by Run. To add a kernel, append an entry to kernelTable: its name, the kernels it
// dispatches, its budget (from metal/budget, the one the conformance tests hold it to) and a
// Run that builds the inputs from c.cfg's sizes, dispatches with c.run and compares with
// c.near / c.exact. Run returns the sizes it used, for the report.
type KernelCheck struct {
	Name    string
	Kernels []string // the library kernels it dispatches and whose results it checks
	Budget  float64  // the largest relative error it accepts (0: exact)
	Run     func(c *checker) (sizes string, err error)
}

// KernelResult is one KernelCheck's outcome on a device.
type KernelResult struct {
	Name    string
	Kernels []string
	Sizes   string
	MaxRel  float64 // worst relative error of any comparison (0 for exact checks that held)
	Budget  float64
	Elapsed time.Duration
	Err     error // nil: PASS
}

// kernelTable is every kernel check, in the order doctor prints them.
func kernelTable() []KernelCheck {
	return []KernelCheck{
		{"abi_probe", []string{"abi_probe"}, 0, checkABIProbe},
		{"qmv_4", []string{"qmv_4"}, budget.MatVec, checkQMVFast(4, false, "in_proj_qkv", (*checkpoint.Config).ConvDim, hidden, [3]int{1, 2, 3})},
		{"qmv_8", []string{"qmv_8"}, budget.MatVec, checkQMVFast(8, false, "in_proj_qkv", (*checkpoint.Config).ConvDim, hidden, [3]int{3, 1, 2})},
		{"qmv_add_4", []string{"qmv_add_4"}, budget.MatVec, checkQMVFast(4, true, "out_proj", hidden, (*checkpoint.Config).ValueDim, [3]int{2, 3, 1})},
		{"qmv_add_8", []string{"qmv_add_8"}, budget.MatVec, checkQMVFast(8, true, "out_proj", hidden, (*checkpoint.Config).ValueDim, [3]int{1, 3, 2})},
		{"qmv_norm_4", []string{"qmv_norm_4"}, budget.MatVec, checkQMVNorm(4, "in_proj_qkv", (*checkpoint.Config).ConvDim, hidden, [3]int{2, 1, 3})},
		{"qmv_norm_8", []string{"qmv_norm_8"}, budget.MatVec, checkQMVNorm(8, "in_proj_qkv", (*checkpoint.Config).ConvDim, hidden, [3]int{3, 2, 1})},
		{"qmm_t32", []string{"qmm_t32"}, budget.Gemm, checkQMM},
		{"rms_norm", []string{"rms_norm"}, budget.Norm, checkRMSNorm},
		{"embed", []string{"embed"}, 0, checkEmbed},
		{"swiglu", []string{"swiglu"}, budget.Elt, checkSwiGLU},
		{"logits_topk", []string{"logits_topk_part", "logits_topk_merge"}, budget.LSE, checkLogitsTopK},
		{"router_8", []string{"router_qmv_8", "router_softmax_topk"}, budget.Route, checkRouter(8, false)},
		{"router_4", []string{"router_qmv_4", "router_softmax_topk"}, budget.Route, checkRouter(4, false)},
		{"router_norm_8", []string{"router_qmv_norm_8", "router_softmax_topk"}, budget.Route, checkRouter(8, true)},
		{"router_norm_4", []string{"router_qmv_norm_4", "router_softmax_topk"}, budget.Route, checkRouter(4, true)},
		{"moe_grouping", []string{"moe_count", "moe_scan", "moe_scatter", "moe_tiles"}, 0, checkMoEGrouping},
		{"moe_decode_4", []string{"moe_gate_up_4", "moe_down_4"}, budget.MoE, checkMoEDecode(4, false)},
		{"moe_decode_8", []string{"moe_gate_up_8", "moe_down_8"}, budget.MoE, checkMoEDecode(8, false)},
		{"moe_decode_norm_4", []string{"moe_gate_up_norm_4", "moe_down_4"}, budget.MoE, checkMoEDecode(4, true)},
		{"moe_decode_norm_8", []string{"moe_gate_up_norm_8", "moe_down_8"}, budget.MoE, checkMoEDecode(8, true)},
		{"moe_prefill", []string{"moe_gemm_t32_gate_up", "moe_gemm_t32_down", "moe_combine"}, budget.MoE, checkMoEPrefill},
		{"attn_prep", []string{"attn_prep"}, budget.Attn, checkAttnPrep},
		{"attn_decode", []string{"attn_decode_split", "attn_decode_combine"}, budget.Attn, checkAttnDecode},
		{"attn_prefill", []string{"attn_prefill"}, budget.Attn, checkAttnPrefill},
		{"deltanet", []string{"deltanet_conv", "deltanet_scan"}, budget.DeltaNet, checkDeltaNet},
	}
}

// hidden is the model's width H, for the sizes of table entries.
func hidden(c *checkpoint.Config) int { return c.HiddenSize }

// RealConfig is the configuration of the real model (synth preset qwen3.6-35b-a3b) as the
// loader would read it from its config.json.
func RealConfig() (*checkpoint.Config, error) {
	s, err := synth.Preset(synth.PresetQwen)
	if err != nil {
		return nil, err
	}
	return s.HFConfig(), nil
}

// CheckKernels runs every entry of the kernel table on dev at the real model's sizes and returns
// one result per entry (an error only when the table cannot run at all).
func CheckKernels(dev device.Device) ([]KernelResult, error) {
	cfg, err := RealConfig()
	if err != nil {
		return nil, err
	}
	return runKernelChecks(dev, cfg, kernelTable())
}

// runKernelChecks runs checks on dev with cfg's sizes, each from its own seeded random source.
func runKernelChecks(dev device.Device, cfg *checkpoint.Config, checks []KernelCheck) ([]KernelResult, error) {
	cs, err := constantSlots()
	if err != nil {
		return nil, fmt.Errorf("kernel checks: %w", err)
	}
	var out []KernelResult
	for i, k := range checks {
		c := &checker{dev: dev, cfg: cfg, rng: rand.New(rand.NewPCG(uint64(i+1), 0x646f63)), constant: cs}
		t0 := time.Now()
		sizes, err := k.Run(c)
		if err == nil {
			err = c.err()
		}
		out = append(out, KernelResult{Name: k.Name, Kernels: k.Kernels, Sizes: sizes, MaxRel: c.worst,
			Budget: k.Budget, Elapsed: time.Since(t0), Err: err})
	}
	return out, nil
}
