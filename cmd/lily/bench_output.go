package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/lily-engine/lily/internal/bench"
)

// writeBenchJSON prints one backend's report as the object itself and several as
// {"backends":[…],"ratios":[…]}, the ratios against the first backend.
func writeBenchJSON(w io.Writer, reps []bench.Report) error {
	var v any = reps[0]
	if len(reps) > 1 {
		v = struct {
			Backends []bench.Report `json:"backends"`
			Ratios   []bench.Ratio  `json:"ratios"`
		}{reps, bench.Ratios(reps)}
	}
	if err := json.NewEncoder(w).Encode(v); err != nil {
		return fmt.Errorf("json report: %w", err)
	}
	return nil
}

// printBench prints each backend's table in turn and, for several, how each later backend's
// speed compares with the first's.
func printBench(w io.Writer, reps []bench.Report, gpuPeak float64) {
	for i, rep := range reps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		printReport(w, rep, gpuPeak)
	}
	if len(reps) < 2 {
		return
	}
	fmt.Fprintf(w, "\nspeed against %s (tok/s over %s's at the same prompt length)\n", reps[0].Backend, reps[0].Backend)
	fmt.Fprintf(w, "%12s %10s %14s %14s\n", "backends", "prompt", "prefill", "decode")
	for _, r := range bench.Ratios(reps) {
		fmt.Fprintf(w, "%12s %10d %13.2f× %13.2f×\n", r.Backend+"/"+r.Baseline, r.PromptTokens, r.Prefill, r.Decode)
	}
}

// printReport prints one backend's measurements and roofline fractions.
func printReport(w io.Writer, rep bench.Report, gpuPeak float64) {
	fmt.Fprintf(w, "backend %s · %.2f GB read per decoded token · %.1f GFLOP per prompt token\n",
		rep.Backend, float64(rep.BytesPerToken)/1e9, rep.FlopsPerToken/1e9)
	fmt.Fprintf(w, "machine: streaming read %.1f GB/s (the best read before, around and after the runs) · kernel peak %.1f GFLOP/s (the better of before and after)\n", rep.MemReadGBs, rep.PeakGFLOPs)
	warm := "no warm-up (each length's first run pays first-touch costs)"
	if rep.WarmUp {
		warm = "after a warm-up (one uncounted run of each length before its repetitions, as llama-bench)"
	}
	fmt.Fprintf(w, "measured %s; %d repetition(s) per length, rates are their mean\n", warm, max(rep.Repetitions, 1))
	fmt.Fprintf(w, "%10s %14s %14s %16s %18s\n", "prompt", "prefill tok/s", "decode tok/s", "decode traffic", "resident−weights")
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%10d %14.2f %14.3f", r.PromptTokens, r.PrefillTokS, r.DecodeTokS)
		if r.TrafficBytesPerToken > 0 && rep.MemReadGBs > 0 {
			fmt.Fprintf(w, " %7.2f GB %5.1f%%", float64(r.TrafficBytesPerToken)/1e9, 100*r.DecodeTrafficFrac)
		} else {
			fmt.Fprintf(w, " %16s", "unknown")
		}
		if r.ResidentBytes > 0 {
			fmt.Fprintf(w, " %15.2f GB", float64(r.ResidentBytes-rep.WeightsBytes)/1e9)
		} else {
			fmt.Fprintf(w, " %18s", "unknown")
		}
		if rep.DeviceCopyGBs > 0 {
			fmt.Fprintf(w, "   of model: prefill %.0f%% decode %.0f%%", 100*r.PrefillOfModelFrac, 100*r.DecodeOfModelFrac)
		}
		fmt.Fprintln(w)
	}
	if rep.DeviceCopyGBs > 0 {
		fmt.Fprintf(w, "device copy bandwidth %.1f GB/s; model fractions use it and %.0f TFLOP/s\n", rep.DeviceCopyGBs, gpuPeak)
	}
	if len(rep.Results) == 0 {
		fmt.Fprintln(w, "no prompt length fits the backend's context (see --ctx-size)")
		return
	}
	near := rep.Results[0].PromptTokens // the length SetMachine measures prefill at: the nearest to 1K
	for _, x := range rep.Results {
		if abs(x.PromptTokens-1024) < abs(near-1024) {
			near = x.PromptTokens
		}
	}
	fmt.Fprintf(w, "decode at %d tokens: %.1f%% of the bandwidth roofline (weights; %.1f%% of the whole traffic's); prefill at %d tokens: %.1f%% of the compute peak\n",
		rep.Results[0].PromptTokens, 100*rep.DecodeRooflineFrac, 100*rep.DecodeTrafficFrac, near, 100*rep.PrefillComputeFrac)
	for _, r := range rep.Results {
		if r.DecodeReadGBs > 0 {
			fmt.Fprintf(w, "decode at %d tokens: %.1f%% of the streaming read measured right before and after each decode (%.1f ± %.1f GB/s; weights)\n",
				r.PromptTokens, 100*r.DecodeOfReadFrac, r.DecodeReadGBs, r.DecodeReadSD)
		}
	}
	printLlamaBench(w, rep)
	printKernels(w, rep.Kernels)
	printPhases(w, rep)
}

// printPhases prints a --phases profile: each phase's time per decode step and share of the step,
// and where its traffic is known (weights, plus the DeltaNet state and the KV cache read), the
// rate it streamed at against the read measured around the profile.
func printPhases(w io.Writer, rep bench.Report) {
	if len(rep.Phases) == 0 {
		return
	}
	read := "unknown"
	if rep.PhasesReadGBs > 0 {
		read = fmt.Sprintf("%.1f GB/s", rep.PhasesReadGBs)
	}
	fmt.Fprintf(w, "decode step by phase (%s, a timing observer attached; streaming read %s around it)\n", rep.PhasesTest, read)
	fmt.Fprintf(w, "%12s %10s %7s %10s %8s %8s\n", "phase", "ms/token", "share", "MB/token", "GB/s", "of read")
	for _, p := range rep.Phases {
		fmt.Fprintf(w, "%12s %10.3f %6.1f%%", p.Phase, p.MsPerStep, 100*p.Share)
		if p.Bytes > 0 {
			fmt.Fprintf(w, " %10.1f %8.1f", float64(p.Bytes)/1e6, p.GBs)
			if p.OfRead > 0 {
				fmt.Fprintf(w, " %7.1f%%", 100*p.OfRead)
			}
		}
		fmt.Fprintln(w)
	}
}

// printLlamaBench prints the results under llama-bench's test names (pp<prompt>, tg<n>@d<depth>),
// mean ± sample standard deviation over the repetitions, for comparison with its tables.
func printLlamaBench(w io.Writer, rep bench.Report) {
	fmt.Fprintf(w, "%16s %22s\n", "test", "t/s")
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%16s %12.2f ± %7.2f\n", r.PrefillTest, r.PrefillTokS, r.PrefillSD)
		fmt.Fprintf(w, "%16s %12.2f ± %7.2f\n", r.DecodeTest, r.DecodeTokS, r.DecodeSD)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
