package perfmodel

import "github.com/lily-engine/lily/metal"

// Design is what a kernel's current design reaches relative to its roofline.
type Design struct {
	Mem  float64 // fraction of the bandwidth a well-occupied dispatch reaches
	Rate Rate    // the compute rate its inner loop uses
	Cmp  float64 // fraction of that rate it reaches
	Why  string  // the design facts the figures follow from
}

// Designs are the kernels of today's plans. ASSUMED: no kernel engineer's per-kernel constant is
// on main yet and no Mac has measured one; the figures follow issue 16's review of each design
// (MLX's qmv_fast and llama.cpp's mul_mv kernels, the reference designs, stream near the
// bandwidth; these do not yet have their structure). Replace a row when its kernel's constant
// lands or `lily bench --backend metal` measures it.
func Designs() map[string]Design {
	return map[string]Design{
		"embed":    {0.5, FP32SIMD, 0.5, "one row gathered per token"},
		"rms_norm": {0.5, FP32SIMD, 0.5, "one threadgroup per row, two reductions"},
		// The qmv_fast design (metal/linear.go's QMVRoofline gives the measurement): per bit width, 8
		// rows per threadgroup, pre-scaled x, a mask and an FMA per weight.
		"qmv_4":         {metal.QMVRoofline, FP32SIMD, 0.5, qmvFast},
		"qmv_8":         {metal.QMVRoofline, FP32SIMD, 0.5, qmvFast},
		"qmv_add_4":     {metal.QMVRoofline, FP32SIMD, 0.5, qmvFast + ", residual add"},
		"qmv_add_8":     {metal.QMVRoofline, FP32SIMD, 0.5, qmvFast + ", residual add"},
		"router_qmv_4":  {metal.QMVRoofline, FP32SIMD, 0.5, qmvFast + " over the router's E rows and the shared gate's one"},
		"router_qmv_8":  {metal.QMVRoofline, FP32SIMD, 0.5, qmvFast + " over the router's E rows and the shared gate's one"},
		"moe_gate_up_4": {metal.QMVRoofline, FP32SIMD, 0.5, qmvFast + " over the 8 routed experts and the shared one, gate and up rows per x slice"},
		"moe_gate_up_8": {metal.QMVRoofline, FP32SIMD, 0.5, qmvFast + " over the 8 routed experts and the shared one, gate and up rows per x slice"},
		"moe_down_4":    {metal.QMVRoofline, FP32SIMD, 0.5, qmvFast + ", weighted sum and residual fused"},
		"moe_down_8":    {metal.QMVRoofline, FP32SIMD, 0.5, qmvFast + ", weighted sum and residual fused"},
		// The fused-norm mat-vecs (metal/norm_fused.go's QMVNormRoofline): qmv_fast with the input's
		// RMSNorm recomputed per SIMD group from the same loads (kernels/qmv_fast_norm.metal).
		"qmv_norm_4":         {metal.QMVNormRoofline, FP32SIMD, 0.5, qmvFast + ", the input's RMSNorm fused"},
		"qmv_norm_8":         {metal.QMVNormRoofline, FP32SIMD, 0.5, qmvFast + ", the input's RMSNorm fused"},
		"router_qmv_norm_4":  {metal.QMVNormRoofline, FP32SIMD, 0.5, qmvFast + " over the router's E rows and the shared gate's one, the post-attention RMSNorm fused"},
		"router_qmv_norm_8":  {metal.QMVNormRoofline, FP32SIMD, 0.5, qmvFast + " over the router's E rows and the shared gate's one, the post-attention RMSNorm fused"},
		"moe_gate_up_norm_4": {metal.QMVNormRoofline, FP32SIMD, 0.5, qmvFast + " over the 8 routed experts and the shared one, the post-attention RMSNorm fused"},
		"moe_gate_up_norm_8": {metal.QMVNormRoofline, FP32SIMD, 0.5, qmvFast + " over the 8 routed experts and the shared one, the post-attention RMSNorm fused"},
		"router_softmax_topk": {metal.RouteTopKRoofline, FP32SIMD, metal.RouteTopKRoofline,
			"one SIMD group per token: softmax and k rounds of simd_max over 1 KB of logits (metal/moe.go)"},
		"deltanet_conv": {0.25, FP32SIMD, 0.25, "one thread per channel; at decode ~100 KB over 8,192 threads, " +
			"launch latency rather than bandwidth (metal/deltanet.go)"},
		"deltanet_scan": {0.3, FP32SIMD, 0.3, "one SIMD group per 8 value columns, the state slice in registers, " +
			"read and written once per dispatch; a chain of dependent simd_sums per token (metal/deltanet.go)"},
		"attn_prep":           {0.4, FP32SIMD, 0.3, "norms, RoPE and the KV append, small grids"},
		"attn_decode_split":   {0.6, FP32SIMD, 0.3, "one simd_sum per key, split-K over the cache"},
		"attn_decode_combine": {0.4, FP32SIMD, 0.3, "merges the splits"},
		"logits_topk_part": {metal.LogitsPartRoofline, FP32SIMD, metal.LogitsPartRoofline,
			"a vocabulary chunk of 4,096 per threadgroup in registers: lse terms, then k barrier-separated argmax rounds (metal/linear.go)"},
		"logits_topk_merge": {metal.LogitsMergeRoofline, FP32SIMD, metal.LogitsMergeRoofline,
			"one threadgroup merges the chunks' sorted top-k lists in k rounds (metal/linear.go)"},
		"attn_prefill": {0.5, FP32SIMD, 0.15, "one SIMD group per (head, query), one simd_sum per key: O(N²) " +
			"scalar work, no tiles"},
		// The tile32 design (metal/linear.go's GEMMTile32Rate and MoEGEMMTile32Rate give the
		// measurement): fp32 simdgroup_matrix at the SIMD rate; Metal 4 tensor ops are not used.
		"qmm_t32":              {metal.GEMMTile32Mem, FP32SIMD, metal.GEMMTile32Rate, tile32},
		"moe_gemm_t32_gate_up": {metal.GEMMTile32Mem, FP32SIMD, metal.MoEGEMMTile32Rate, tile32 + " over (expert, 32-slot tile) work-list entries; gate and up tiles share the X tile"},
		"moe_gemm_t32_down":    {metal.GEMMTile32Mem, FP32SIMD, metal.MoEGEMMTile32Rate, tile32 + " over (expert, 32-slot tile) work-list entries"},
		"moe_tiles":            {0.3, FP32SIMD, 0.3, "one threadgroup prefix sum of tiles per expert"},
		"moe_count":            {0.3, FP32SIMD, 0.3, "atomics per slot"},
		"moe_scan":             {0.3, FP32SIMD, 0.3, "one threadgroup prefix sum over the experts"},
		"moe_scatter":          {0.3, FP32SIMD, 0.3, "atomics per slot"},
		"swiglu":               {0.7, FP32SIMD, 0.5, "elementwise"},
		"moe_combine":          {0.6, FP32SIMD, 0.5, "weighted sum of the slots, shared gate, residual"},
	}
}

// tile32 is the design note of the prefill GEMMs (kernels/gemm_tile32.metal).
const tile32 = "tile32: 32×32 output tile over 4 SIMD groups of 2×2 fp32 8×8 fragments, K stepped by 32, weights dequantised into threadgroup memory"

// qmvFast is the design note of the qmv_fast kernels (kernels/qmv_fast.metal).
const qmvFast = "qmv_fast: 2 SIMD groups × 4 rows, 2 packed words per lane per step, x pre-scaled once per step"
