package perfmodel

import (
	"fmt"
	"strings"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/metal"
)

// perfDoc renders docs/metal-performance.md from the performance model and the engine's plans.
func perfDoc(cfg *checkpoint.Config, m Machine, pc metal.PlanCounts) (string, error) {
	dec, err := DecodeCosts(cfg, docContext)
	if err != nil {
		return "", err
	}
	pre, err := PrefillCosts(cfg, docContext)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Metal performance model\n\n")
	w("Two models. The roofline (first) is the bound: every byte at full bandwidth, every FLOP at the\n")
	w("matrix peak. The honest model (\"The honest model\" below) prices what the engine actually does —\n")
	w("its real plans' dispatches, barriers and calls, each kernel's design, occupancy and chunking — and\n")
	w("is the prediction a Mac run of `lily bench --backend metal` checks.\n\n")
	w("Generated from `metal/perfmodel` by `go test ./metal/perfmodel -run TestPerfModelDoc -update`; the test fails\n")
	w("when this file and the model disagree. Do not edit by hand.\n\n")
	w("For each kernel of a decode step and of a prefill chunk, the bytes it moves and the FLOPs it does\n")
	w("per token at the real dimensions of Qwen3.6-35B-A3B (MLX 4-bit, group 64; router and shared-expert\n")
	w("gate 8-bit), and the time that implies on an %s (%.0f GB/s, %.0f TFLOPS fp16): each kernel\n",
		m.Name, m.Bandwidth/1e9, m.Peak/1e12)
	w("takes max(bytes / bandwidth, FLOPs / peak). It is a roofline, so a lower bound on time: it\n")
	w("assumes every operand crosses memory once per dispatch (tiles that other threadgroups re-read\n")
	w("come from cache; the %d query heads sharing a KV head read it once) and ignores launch gaps,\n", cfg.NumHeads/cfg.NumKVHeads)
	w("occupancy, dequantization ALU work and the sequential dependence of the DeltaNet scan.\n\n")
	w("Bytes by kind: *weights* are the stored checkpoint bytes (packed words, bf16 scales and biases,\n")
	w("bf16 vectors); the decode weights equal the loader's `decode_bytes_per_token` exactly\n")
	w("(`TestPerfModelCheckpointBytes`). *Other* is float32 activations, the widening of bf16 vectors\n")
	w("the kernels read as float32, the DeltaNet fp32 recurrent and conv state, and the fp16 KV cache.\n\n")

	table := func(title string, cs []Cost, published float64, unit string) {
		total := m.Total(cs)
		w("## %s\n\n", title)
		w("| step | kernel | dispatches (cost table) | weights MB | other MB | MFLOP | µs | bound |\n")
		w("|---|---|---:|---:|---:|---:|---:|---|\n")
		var wb, ob, fl float64
		for _, c := range cs {
			bound := "memory"
			if c.FLOPs/m.Peak > c.Bytes()/m.Bandwidth {
				bound = "compute"
			}
			w("| %s | `%s` | %d | %.3f | %.3f | %.3f | %.2f | %s |\n", c.Step, c.Kernel, c.Calls,
				c.Weights/1e6, (c.Bytes()-c.Weights)/1e6, c.FLOPs/1e6, m.Seconds(c)*1e6, bound)
			wb, ob, fl = wb+c.Weights, ob+c.Bytes()-c.Weights, fl+c.FLOPs
		}
		w("| **total** | | | %.3f | %.3f | %.3f | %.2f | |\n\n", wb/1e6, ob/1e6, fl/1e6, total*1e6)
		w("Roofline: **%.0f tok/s** %s (a bound, not a prediction: see the honest model below). Published Lily: %.0f tok/s, %.0f%% of it.\n\n",
			1/total, unit, published, 100*published*total)
	}
	table(fmt.Sprintf("Decode: one token at context %d (per token)", docContext), dec, PublishedDecodeTokS,
		"decode")
	w("Dispatches are per decode step; the cache is split into %.0f key ranges per kv head (the engine's\n"+
		"split at this length, metal.DecodeSplit).\n\n", decodeRanges(docContext+1, cfg.NumKVHeads))
	table(fmt.Sprintf("Prefill: a %d-token prompt as one chunk (per prompt token)", docContext), pre,
		PublishedPrefillTokS, "prefill")
	w("Dispatches are per chunk; byte and FLOP columns are the chunk's totals divided by its tokens.\n")
	w("Weights are read once per chunk: the grouped expert GEMMs read every expert that holds at least\n")
	w("one slot (under uniform routing, 1 − (1 − k/E)^T of them), and logits are computed for the last\n")
	w("token only. `deltanet_scan` is priced by its traffic and FLOPs, but it walks the chunk one token at a\n")
	w("time with one threadgroup per key head, so on a GPU it is latency-bound, not roofline-bound: it\n")
	w("is the first place to look when a measured prefill falls short of this table. The GEMMs use\n")
	w("float32 `simdgroup_float8x8` tiles and dequantize each weight once per 8-token tile; the fp16\n")
	w("peak above is the machine's, which those tiles may not reach.\n\n")
	w("## Over the published prompt lengths\n\n")
	w("Decode at a context of that many tokens; prefill of a prompt of that length as one chunk (the\n")
	w("attention work grows with the square of the length; chunking changes the weight reads only).\n\n")
	w("| tokens | decode tok/s | prefill tok/s |\n|---:|---:|---:|\n")
	for _, n := range []int{256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072} {
		d, p, err := Predict(m, cfg, n)
		if err != nil {
			return "", err
		}
		w("| %d | %.0f | %.0f |\n", n, d, p)
	}
	w("\n")
	if err := honestDoc(&b, cfg, pc); err != nil {
		return "", err
	}
	return b.String(), nil
}
