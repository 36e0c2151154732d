// Package bench measures a backend at batch 1 by the published protocol: for each prompt length,
// after a warm-up run of that length that is not counted, prefill a prompt of that many tokens, then
// decode a fixed number of tokens, repeated a given number of times, and report tokens per second
// of each phase (mean and standard deviation over the repetitions), also under llama-bench's test
// names. The roofline fractions relate those rates to the machine's measured streaming-read
// bandwidth (decode) and compute peak (prefill).
package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/lily-engine/lily/internal/engine"
)

// DefaultPromptLengths is the published protocol: 256 to 128K tokens.
var DefaultPromptLengths = []int{256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072}

// Result is one prompt length's measurement. With several repetitions the rates are the mean of
// each repetition's rate, the times the mean time, and the _sd fields the sample standard
// deviation of the rates (0 for one repetition).
type Result struct {
	PromptTokens int     `json:"prompt_tokens"`
	PrefillTokS  float64 `json:"prefill_tok_s"`
	DecodeTokS   float64 `json:"decode_tok_s"`
	PrefillSec   float64 `json:"prefill_s"`
	DecodeSec    float64 `json:"decode_s"`
	DecodeTokens int     `json:"decode_tokens"`
	Repetitions  int     `json:"repetitions"`
	PrefillSD    float64 `json:"prefill_tok_s_sd"`
	DecodeSD     float64 `json:"decode_tok_s_sd"`
	// PrefillTest and DecodeTest name the two measurements as llama-bench does: "pp256" is a
	// 256-token prompt processed, "tg16@d256" 16 tokens generated after 256 of context.
	PrefillTest string `json:"prefill_test"`
	DecodeTest  string `json:"decode_test"`
	// ResidentBytes is the process's resident memory at the end of the decode, with the session
	// still open (0 when Options.Resident is unset or cannot tell).
	ResidentBytes int64 `json:"resident_bytes,omitempty"`
	// TrafficBytesPerToken is a decode step's whole memory traffic at this length, on average over
	// the decoded tokens: the weights, the recurrent state read and written, and the KV cache read
	// (Report.SetTraffic); DecodeTrafficFrac is decode against that traffic's roofline.
	TrafficBytesPerToken int64   `json:"traffic_bytes_per_token,omitempty"`
	DecodeTrafficFrac    float64 `json:"decode_traffic_frac,omitempty"`
	// On a GPU: the performance model's prediction for this length at the measured copy bandwidth,
	// and the measured figures as fractions of it.
	// DecodeReadGBs is the streaming-read bandwidth measured right before and right after each
	// decode (Options.Bandwidth), the mean of the two over the repetitions, and DecodeReadSD its
	// sample standard deviation over every measurement; DecodeOfReadFrac is the decode's weight
	// traffic against it (Report.SetMachine). On a host whose bandwidth drifts as its neighbours
	// come and go, this is the roofline of the moment the decode ran.
	DecodeReadGBs      float64 `json:"decode_read_gbs,omitempty"`
	DecodeReadSD       float64 `json:"decode_read_gbs_sd,omitempty"`
	DecodeOfReadFrac   float64 `json:"decode_of_read_frac,omitempty"`
	ModelDecodeTokS    float64 `json:"model_decode_tok_s,omitempty"`
	ModelPrefillTokS   float64 `json:"model_prefill_tok_s,omitempty"`
	DecodeOfModelFrac  float64 `json:"decode_of_model_frac,omitempty"`
	PrefillOfModelFrac float64 `json:"prefill_of_model_frac,omitempty"`

	reads []float64 // one repetition's bandwidth measurements (before, after), for merge
}

// Options says what to measure.
type Options struct {
	PromptLengths []int
	DecodeTokens  int
	Seed          uint64
	// Repetitions is how many times each length is measured (0 means 1).
	Repetitions int
	// WarmUp runs each length once before measuring it and discards the run, as llama-bench
	// does: the first prefill and decode of a process pay first-touch costs (page faults on the
	// mapped weights and on new buffers, the workers' first wake-ups), and so does the first prompt
	// of a length longer than any before (its larger buffers), none of which is the steady state.
	WarmUp bool
	// WarmedUp, when set, is called after each warm-up run.
	WarmedUp func(promptTokens int)
	// Progress, when set, is called before each length is measured.
	Progress func(promptTokens int)
	// Bandwidth, when set, measures the machine's streaming-read bandwidth in GB/s (0: unknown);
	// it runs right before and right after every measured decode, outside the timed spans.
	Bandwidth func() float64
	// Resident, when set, reports the process's resident memory in bytes (ok false: unknown).
	Resident func() (bytes int64, ok bool)
}

// Run measures b at every prompt length that fits its context (prompt + decode tokens).
func Run(ctx context.Context, b engine.Backend, opt Options) ([]Result, error) {
	if opt.DecodeTokens < 1 {
		return nil, fmt.Errorf("bench: decode tokens must be at least 1, got %d", opt.DecodeTokens)
	}
	if opt.Repetitions < 0 {
		return nil, fmt.Errorf("bench: repetitions must not be negative, got %d", opt.Repetitions)
	}
	reps := max(opt.Repetitions, 1)
	var fit []int
	for _, n := range opt.PromptLengths {
		if n < 1 {
			return nil, fmt.Errorf("bench: prompt length must be positive, got %d", n)
		}
		if n+opt.DecodeTokens <= b.MaxContext() {
			fit = append(fit, n)
		}
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x6c696c79))
	var out []Result
	for _, n := range fit {
		if opt.WarmUp {
			if _, err := one(ctx, b, n, opt.DecodeTokens, rng, nil, nil); err != nil {
				return out, fmt.Errorf("bench: warm-up with a %d-token prompt: %w", n, err)
			}
			if opt.WarmedUp != nil {
				opt.WarmedUp(n)
			}
		}
		if opt.Progress != nil {
			opt.Progress(n)
		}
		runs := make([]Result, reps)
		for i := range runs {
			r, err := one(ctx, b, n, opt.DecodeTokens, rng, opt.Resident, opt.Bandwidth)
			if err != nil {
				return out, fmt.Errorf("bench: %d-token prompt: %w", n, err)
			}
			runs[i] = r
		}
		out = append(out, merge(runs))
	}
	return out, nil
}

// randomPrompt returns n token ids drawn uniformly from a vocabulary of vocab.
func randomPrompt(rng *rand.Rand, n, vocab int) []int32 {
	prompt := make([]int32, n)
	for i := range prompt {
		prompt[i] = int32(rng.IntN(vocab))
	}
	return prompt
}

// merge joins the repetitions of one length: mean rates and times, the rates' sample standard
// deviations, the last repetition's resident memory.
func merge(runs []Result) Result {
	r := runs[len(runs)-1]
	r.Repetitions = len(runs)
	pre, dec := make([]float64, len(runs)), make([]float64, len(runs))
	var ps, ds float64
	for i, x := range runs {
		pre[i], dec[i] = x.PrefillTokS, x.DecodeTokS
		ps += x.PrefillSec
		ds += x.DecodeSec
	}
	r.PrefillTokS, r.PrefillSD = meanSD(pre)
	r.DecodeTokS, r.DecodeSD = meanSD(dec)
	r.PrefillSec, r.DecodeSec = ps/float64(len(runs)), ds/float64(len(runs))
	var reads []float64
	for _, x := range runs {
		reads = append(reads, x.reads...)
	}
	r.reads = nil
	if len(reads) == 2*len(runs) { // every repetition measured: else the figure is left out
		r.DecodeReadGBs, r.DecodeReadSD = meanSD(reads)
	}
	return r
}

// meanSD returns the mean of xs and their sample standard deviation (0 for fewer than two).
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

func one(ctx context.Context, b engine.Backend, n, decode int, rng *rand.Rand, resident func() (int64, bool), bandwidth func() float64) (Result, error) {
	prompt := randomPrompt(rng, n, b.VocabSize())
	s, err := b.NewSession()
	if err != nil {
		return Result{}, err
	}
	defer s.Close()
	t0 := time.Now()
	// Greedy steps: what a greedy request asks of the backend (the greedy id, no logits).
	step, err := s.Prefill(ctx, prompt, engine.StepOptions{}, nil)
	if err != nil {
		return Result{}, err
	}
	prefill := time.Since(t0)
	var reads []float64
	if bandwidth != nil {
		reads = append(reads, bandwidth())
	}
	t1 := time.Now()
	for i := 0; i < decode; i++ {
		if step, err = s.Decode(ctx, step.Greedy, engine.StepOptions{}); err != nil {
			return Result{}, err
		}
	}
	dec := time.Since(t1)
	if bandwidth != nil {
		reads = append(reads, bandwidth())
	}
	r := Result{
		PromptTokens: n, DecodeTokens: decode, Repetitions: 1,
		PrefillSec: prefill.Seconds(), DecodeSec: dec.Seconds(),
		PrefillTokS: float64(n) / prefill.Seconds(), DecodeTokS: float64(decode) / dec.Seconds(),
		PrefillTest: fmt.Sprintf("pp%d", n), DecodeTest: fmt.Sprintf("tg%d@d%d", decode, n),
	}
	if len(reads) == 2 && reads[0] > 0 && reads[1] > 0 {
		r.reads = reads // merge turns them into DecodeReadGBs
	}
	if resident != nil {
		if rb, ok := resident(); ok {
			r.ResidentBytes = rb
		}
	}
	return r, nil
}

// Report is the whole run: results plus the roofline they are judged against.
type Report struct {
	Backend            string   `json:"backend"`
	Results            []Result `json:"results"`
	BytesPerToken      int64    `json:"bytes_per_token"`               // weight bytes one decode step reads
	FlopsPerToken      float64  `json:"flops_per_token"`               // prefill FLOPs per prompt token (2 x active matmul params)
	MemReadGBs         float64  `json:"mem_read_gbs"`                  // measured streaming-read bandwidth
	PeakGFLOPs         float64  `json:"peak_gflops"`                   // measured kernel compute peak
	DecodeRooflineFrac float64  `json:"decode_roofline_frac"`          // shortest prompt's decode vs bandwidth roofline
	DecodeTrafficFrac  float64  `json:"decode_traffic_frac"`           // the same counting state and KV traffic (0 when unknown)
	PrefillComputeFrac float64  `json:"prefill_compute_frac"`          // 1K prefill (or nearest) vs compute peak
	DecodeOfReadFrac   float64  `json:"decode_of_read_frac,omitempty"` // shortest prompt's decode vs the read measured around it
	DeviceCopyGBs      float64  `json:"device_copy_gbs,omitempty"`     // GPU: measured blit-copy bandwidth
	WeightsBytes       int64    `json:"weights_bytes,omitempty"`       // the mapped checkpoint tensors
	WarmUp             bool     `json:"warmup"`                        // an uncounted run of each length preceded its measurements
	Repetitions        int      `json:"repetitions"`                   // measurements per prompt length
	// Kernels are a GPU backend's decode step kernel by kernel: measured (one command buffer per
	// dispatch) against the performance model.
	Kernels []KernelRow `json:"kernels,omitempty"`
	// Phases are a decode step split by phase (lily bench --phases): PhasesTest names the profiled
	// decode as DecodeTest does, PhasesReadGBs is the read measured around it.
	Phases        []PhaseRow `json:"decode_phases,omitempty"`
	PhasesTest    string     `json:"decode_phases_test,omitempty"`
	PhasesReadGBs float64    `json:"decode_phases_read_gbs,omitempty"`
}

// KernelRow is one kernel of a profiled decode step: its dispatches, the measured time (GPU time
// on Metal; wall clock on the emulator) and the performance model's, in microseconds.
type KernelRow struct {
	Kernel     string  `json:"kernel"`
	Dispatches int     `json:"dispatches"`
	MeasuredUS float64 `json:"measured_us"`
	ModelledUS float64 `json:"modelled_us"`
}

// AgainstModel fills each result's prediction by predict(promptTokens) and the measured/predicted
// fractions; it records the device bandwidth the predictions used.
func (r *Report) AgainstModel(copyGBs float64, predict func(n int) (decode, prefill float64, err error)) error {
	r.DeviceCopyGBs = copyGBs
	for i := range r.Results {
		x := &r.Results[i]
		d, p, err := predict(x.PromptTokens)
		if err != nil {
			return err
		}
		x.ModelDecodeTokS, x.ModelPrefillTokS = d, p
		if d > 0 {
			x.DecodeOfModelFrac = x.DecodeTokS / d
		}
		if p > 0 {
			x.PrefillOfModelFrac = x.PrefillTokS / p
		}
	}
	return nil
}

// Summarize computes the roofline fractions: decode at the shortest prompt length, and prefill at
// 1,024 tokens or the nearest length measured.
func Summarize(backend string, rs []Result, bytesPerToken int64, flopsPerToken, memReadGBs, peakGFLOPs float64) Report {
	r := Report{Backend: backend, Results: rs, BytesPerToken: bytesPerToken, FlopsPerToken: flopsPerToken}
	r.SetMachine(memReadGBs, peakGFLOPs)
	return r
}

// SetTraffic sets each result's whole decode traffic per token: the weights (BytesPerToken), plus
// stateBytes read and written per step, plus kvPerPosition per position of the average context a
// decoded token attends over (the prompt and half the decoded tokens), and recomputes the fractions.
func (r *Report) SetTraffic(stateBytes, kvPerPosition int64) {
	for i := range r.Results {
		x := &r.Results[i]
		x.TrafficBytesPerToken = r.BytesPerToken + stateBytes + int64(float64(kvPerPosition)*MeanContext(x.PromptTokens, x.DecodeTokens))
	}
	r.SetMachine(r.MemReadGBs, r.PeakGFLOPs)
}

// MeanContext is how many positions a decoded token attends over on average when decode tokens
// follow a prompt of prompt tokens: the prompt and half the decoded tokens.
func MeanContext(prompt, decode int) float64 { return float64(prompt) + float64(decode+1)/2 }

// SetMachine sets the machine figures the fractions are measured against and recomputes the
// fractions: decode of the shortest prompt against the bandwidth roofline, prefill of the prompt
// nearest 1K tokens against the compute peak (zero where a figure is missing).
func (r *Report) SetMachine(memReadGBs, peakGFLOPs float64) {
	r.MemReadGBs, r.PeakGFLOPs = memReadGBs, peakGFLOPs
	r.DecodeRooflineFrac, r.PrefillComputeFrac, r.DecodeTrafficFrac, r.DecodeOfReadFrac = 0, 0, 0, 0
	for i := range r.Results {
		x := &r.Results[i]
		x.DecodeTrafficFrac, x.DecodeOfReadFrac = 0, 0
		if x.DecodeReadGBs > 0 {
			x.DecodeOfReadFrac = x.DecodeTokS * float64(r.BytesPerToken) / (x.DecodeReadGBs * 1e9)
		}
		if memReadGBs > 0 {
			x.DecodeTrafficFrac = x.DecodeTokS * float64(x.TrafficBytesPerToken) / (memReadGBs * 1e9)
		}
	}
	if len(r.Results) == 0 {
		return
	}
	shortest, near1K := r.Results[0], r.Results[0]
	for _, x := range r.Results {
		if x.PromptTokens < shortest.PromptTokens {
			shortest = x
		}
		if abs(x.PromptTokens-1024) < abs(near1K.PromptTokens-1024) {
			near1K = x
		}
	}
	if memReadGBs > 0 {
		r.DecodeRooflineFrac = shortest.DecodeTokS * float64(r.BytesPerToken) / (memReadGBs * 1e9)
		r.DecodeTrafficFrac = shortest.DecodeTrafficFrac
	}
	r.DecodeOfReadFrac = shortest.DecodeOfReadFrac
	if peakGFLOPs > 0 {
		r.PrefillComputeFrac = near1K.PrefillTokS * r.FlopsPerToken / (peakGFLOPs * 1e9)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
