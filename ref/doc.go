// Package ref is lily's oracle: a plain, exact, pure-Go forward pass of Qwen3.6-35B-A3B that reads
// like model.md. One function per layer, the formula in its doc comment, shapes in comments.
//
// Numerics: ref is a float32 model. Activations are float32 and are never rounded to bf16; every dot
// product and reduction (norms, softmax, attention, delta-rule contractions) accumulates in float64
// and rounds once to float32; the DeltaNet recurrent state is float32. The order of operations follows
// transformers' modeling_qwen3_5_moe.py, so ref agrees with transformers run in float32 on the same
// weights (bf16-valued, or dequantized with w = float32(scale)·float32(q) + float32(bias)). Weights
// stay in their stored form; a matrix is dequantized one row at a time.
//
// Where each piece lives (model.md sections in brackets):
//
//	quant.go      bf16/f16 conversions, Quantize and DenseMatrix for tests and tools        [§3]
//	linear.go     Row (dequantize one row), MatVec, Linear, Embed             [§3.2]
//	norm.go       RMSNorm (zero-centred, multiplier given), GatedRMSNorm, SiLU, Softplus  [§4.2]
//	conv.go       CausalConv1D with its K−1-row state                                     [§4.3.2]
//	deltanet.go   GatedDeltaNet (the layer), L2Normalize, DeltaRuleRecurrent              [§4.3]
//	deltachunk.go DeltaRuleChunked (chunk 64)                                             [§4.3.8]
//	attention.go  RopeCosSin, ApplyRoPE, AttendHead, GatedAttention with its KV cache      [§4.4]
//	moe.go        Softmax, Route, SwiGLU, MoEBlock                                        [§4.5]
//	model.go      New (validation), DecoderLayer, Logits                                  [§4.1]
//	session.go    State, Session (engine.Session), Backend (engine.Backend)
//
// A Model is read-only and safe for concurrent use; a Session belongs to one goroutine at a time.
package ref
