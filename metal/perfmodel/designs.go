package perfmodel

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
		"qmv": {0.55, FP32SIMD, 0.5, "bits a runtime value (no unrolling, variable shifts), scales reloaded per word, " +
			"x re-read per row"},
		"qmv_add": {0.55, FP32SIMD, 0.5, "qmv with the residual add"},
		"router_topk": {0.55, FP32SIMD, 0.5, "one threadgroup per token reads the whole 8-bit router, then " +
			"softmax and top-k"},
		"moe_gate_up": {0.55, FP32SIMD, 0.5, "qmv-style rows over the 8 routed experts and the shared one"},
		"moe_down":    {0.55, FP32SIMD, 0.5, "qmv-style rows, weighted sum fused"},
		"deltanet_conv": {0.25, FP32SIMD, 0.25, "one thread per channel; at decode ~100 KB over 8,192 threads, " +
			"launch latency rather than bandwidth (metal/deltanet.go)"},
		"deltanet_scan": {0.3, FP32SIMD, 0.3, "one SIMD group per 8 value columns, the state slice in registers, " +
			"read and written once per dispatch; a chain of dependent simd_sums per token (metal/deltanet.go)"},
		"attn_prep":           {0.4, FP32SIMD, 0.3, "norms, RoPE and the KV append, small grids"},
		"attn_decode_split":   {0.6, FP32SIMD, 0.3, "one simd_sum per key, split-K over the cache"},
		"attn_decode_combine": {0.4, FP32SIMD, 0.3, "merges the splits"},
		"logits_topk":         {0.5, FP32SIMD, 0.3, "one threadgroup: log-sum-exp and top-k over the vocabulary"},
		"attn_prefill": {0.5, FP32SIMD, 0.15, "one SIMD group per (head, query), one simd_sum per key: O(N²) " +
			"scalar work, no tiles"},
		"qmm": {0.5, FP32SIMD, 0.2, "one SIMD group per 8×8 fp32 simdgroup_matrix tile, K stepped by 8, a " +
			"scalar dequant per element"},
		"moe_gemm_gate_up": {0.5, FP32SIMD, 0.2, "qmm's tiles over expert-grouped rows; a threadgroup per " +
			"(tile, expert) whether or not the expert has rows"},
		"moe_gemm_down": {0.5, FP32SIMD, 0.2, "as moe_gemm_gate_up"},
		"moe_count":     {0.3, FP32SIMD, 0.3, "atomics per slot"},
		"moe_scan":      {0.3, FP32SIMD, 0.3, "one threadgroup prefix sum over the experts"},
		"moe_scatter":   {0.3, FP32SIMD, 0.3, "atomics per slot"},
		"swiglu":        {0.7, FP32SIMD, 0.5, "elementwise"},
		"moe_combine":   {0.6, FP32SIMD, 0.5, "weighted sum of the slots, shared gate, residual"},
	}
}
