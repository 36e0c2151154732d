package perfmodel

// The machines and the costs outside the kernels that the honest model (honest.go) prices. Every
// figure is an assumption until a Mac run of `lily bench --backend metal` measures it; each says
// where it comes from.

// Rate is which of a GPU's compute rates a kernel's inner loop can use.
type Rate int

// The rates: scalar/SIMD fp32, SIMD fp16, and the matrix path (Metal 4 tensor operations on
// M5-class GPUs, simdgroup_matrix on older ones).
const (
	FP32SIMD Rate = iota
	FP16SIMD
	Matrix
	numRates
)

func (r Rate) String() string {
	return [...]string{"fp32 SIMD", "fp16 SIMD", "matrix"}[r]
}

// GPU is a machine as the honest model prices it.
type GPU struct {
	Name      string
	Family    string
	Cores     int
	Bandwidth float64           // bytes/s a streaming kernel reaches
	Rates     [numRates]float64 // FLOP/s at each rate
	MatrixVia string            // how kernels reach the matrix rate
}

// M5MaxGPU is the M5 Max of Lily's published figures (40-core GPU). Bandwidth as the roofline
// assumes it; the rates are issue 16's: fp32 SIMD ~18, fp16 SIMD ~30, matrix ~58 TFLOPS (the low
// end of 58–70) through Metal 4 tensor operations.
func M5MaxGPU() GPU {
	return GPU{Name: "Apple M5 Max (40-core GPU)", Family: "Apple10 / Metal 4", Cores: 40, Bandwidth: 577e9,
		Rates: [numRates]float64{18e12, 30e12, 58e12}, MatrixVia: "Metal 4 tensor ops (mpp::tensor_ops::matmul2d)"}
}

// M4MaxGPU is an M4 Max (40-core GPU): Apple's 546 GB/s; 40 cores × 128 fp32 lanes × 2 FLOPs ×
// ~1.58 GHz ≈ 16 TFLOPS, with fp16 SIMD and simdgroup_matrix assumed at the same rate (no
// tensor-op matrix units before the M5 generation).
func M4MaxGPU() GPU {
	return GPU{Name: "Apple M4 Max (40-core GPU)", Family: "Apple9", Cores: 40, Bandwidth: 546e9,
		Rates: [numRates]float64{16e12, 16e12, 16e12}, MatrixVia: "simdgroup_matrix (SIMD rate)"}
}

// M3MaxGPU is an M3 Max (40-core GPU): Apple's 400 GB/s; ~16 TFLOPS fp32 by the same arithmetic
// at ~1.4 GHz, fp16 and simdgroup_matrix assumed at that rate.
func M3MaxGPU() GPU {
	return GPU{Name: "Apple M3 Max (40-core GPU)", Family: "Apple9", Cores: 40, Bandwidth: 400e9,
		Rates: [numRates]float64{14e12, 14e12, 14e12}, MatrixVia: "simdgroup_matrix (SIMD rate)"}
}

// Overheads are the costs the roofline leaves out. All are assumptions (no Mac measurement
// yet); `lily bench --backend metal` on a Mac prints each kernel's measured GPU time next to the
// model's, and the whole step's, which is what corrects them.
type Overheads struct {
	// Call is the CPU time of one Objective-C message sent through objc_msgSend with
	// purego.SyscallN: a Go→C transition (~0.1 µs) plus the Metal method. Issue 16 puts the
	// reflective objc.Send path at ~1 µs per call.
	Call float64
	// Step is the GPU time lost per dependent step: one dispatch after another in a serial
	// encoder, or one barrier in a concurrent one (the GPU drains, then ramps up again).
	Step float64
	// Group is the GPU time per threadgroup launched, for the whole GPU: ~100 ns per threadgroup
	// per core, divided over the cores. It is what a grid of mostly empty threadgroups costs.
	Group float64
	// Submit is the time per command list between the first commit and the GPU starting, plus
	// from the last completion to the waiting thread running.
	Submit float64
	// ScanStep is the latency of one token's step of deltanet_scan's sequential walk over a
	// prefill chunk, per dispatch: one thread per state column runs a dependent chain of ~4 × Dk
	// FMAs and reductions per token.
	ScanStep float64
	// TGShare is how many cores' share of the bandwidth one threadgroup can draw: a dispatch of g
	// threadgroups reaches at most min(1, TGShare·g/cores) of the bandwidth.
	TGShare float64
}

// DefaultOverheads are the assumptions the document prints.
func DefaultOverheads(g GPU) Overheads {
	return Overheads{Call: 0.15e-6, Step: 3e-6, Group: 100e-9 / float64(g.Cores), Submit: 40e-6,
		ScanStep: 1.5e-6, TGShare: 2}
}

// Published figures on an M5 Max, tokens/s, mean over the ten prompt lengths (256 … 128K).
const (
	LilyDecodeMean   = 170
	LilyPrefillMean  = 4156
	MLXLMDecodeMean  = 126
	MLXLMPrefillMean = 3388
)

// Targets issue 16 sets for the model's M5 Max prediction.
const (
	TargetDecode256   = 250
	TargetPrefillMean = 5000
)

// Lengths returns the ten published prompt lengths.
func Lengths() []int { return []int{256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072} }
