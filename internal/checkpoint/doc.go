// Package checkpoint opens a Qwen3.6-35B-A3B checkpoint directory (HF bf16 or MLX 4-bit,
// single-file or sharded safetensors), validates config.json and every text-model tensor
// against it, and exposes the typed Weights that ref, fast and metal compute with. Tensor data
// is never copied: matrices alias the memory-mapped files until Checkpoint.Close. Small vectors
// (norms, conv, A_log, dt_bias) are converted to float32 at load time.
//
// Locate finds the default checkpoint in the Hugging Face cache, and Stats gives the figures
// `lily inspect` prints.
package checkpoint
