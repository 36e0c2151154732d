package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/lily-engine/lily/internal/bench"
	"github.com/lily-engine/lily/metal/device"
	"github.com/lily-engine/lily/metal/perfmodel"
)

// benchRun is what every backend measured by one lily bench shares.
type benchRun struct {
	dir      string        // the located checkpoint
	opt      bench.Options // prompt lengths, decode tokens, seed, resident memory
	mach     machine       // measured before any backend opens (cmdBench measures again after)
	gpuPeak  float64       // TFLOP/s the Metal performance model assumes
	phases   bool          // --phases: profile a decode step by phase after the measured runs
	progress io.Writer
}

// measure opens the backend s names, calls ready, measures the backend and closes it again.
func (r *benchRun) measure(ctx context.Context, s backendSpec, ready func() error) (rep bench.Report, err error) {
	l, err := openBackend(r.dir, s)
	if err != nil {
		return rep, fmt.Errorf("backend %s: %w", s.name, err)
	}
	defer func() {
		if cerr := l.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing backend %s: %w", s.name, cerr))
		}
	}()
	if err := ready(); err != nil {
		return rep, err
	}
	opt := r.opt
	if _, gpu := l.backend.(interface{ Device() device.Device }); !gpu {
		// A CPU backend's decode against the read bandwidth measured around it (a GPU's roofline
		// is its own copy bandwidth, measured below).
		m := newReadMeter()
		defer m.close()
		opt.Bandwidth = m.measure
		if res := opt.Resident; res != nil { // the run's memory, not the meter's buffer
			opt.Resident = func() (int64, bool) {
				b, ok := res()
				return b - m.heldBytes(), ok
			}
		}
	}
	opt.Progress = func(n int) { fmt.Fprintf(r.progress, "lily bench: %s, %d-token prompt…\n", s.name, n) }
	opt.WarmedUp = func(n int) {
		fmt.Fprintf(r.progress, "lily bench: %s warmed up (one uncounted %d-token prompt and %d decoded tokens)\n", s.name, n, opt.DecodeTokens)
	}
	rs, err := bench.Run(ctx, l.backend, opt)
	if err != nil {
		return rep, fmt.Errorf("backend %s: %w", s.name, err)
	}
	st := l.ck.Stats()
	// A prompt token costs 2 FLOPs per active matrix parameter, except lm_head, which prefill applies
	// to the last position only.
	lmHead := float64(l.ck.Config.VocabSize) * float64(l.ck.Config.HiddenSize)
	rep = bench.Summarize(s.name, rs, st.DecodeBytesPerToken, 2*(float64(st.ParamsActive)-lmHead), r.mach.memReadGBs, r.mach.peakGFLOPs)
	rep.WeightsBytes = st.BytesTotal
	rep.WarmUp, rep.Repetitions = opt.WarmUp, max(opt.Repetitions, 1)
	kv := st.KVBytesPerPosition // float32 K and V
	if e, ok := l.backend.(interface{ KVElementBytes() int }); ok {
		kv = kv / 4 * int64(e.KVElementBytes()) // an fp16 cache reads half of them
	}
	rep.SetTraffic(st.StateBytesPerToken, kv)
	if r.phases && len(rs) > 0 {
		n := rs[0].PromptTokens // the shortest prompt measured
		for _, x := range rs {
			n = min(n, x.PromptTokens)
		}
		fmt.Fprintf(r.progress, "lily bench: %s, profiling %d decode steps after a %d-token prompt by phase…\n", s.name, opt.DecodeTokens, n)
		t, read, err := bench.ProfileDecode(ctx, l.backend, n, opt.DecodeTokens, opt.Seed, opt.Bandwidth)
		if err != nil {
			return rep, fmt.Errorf("backend %s: --phases: %w", s.name, err)
		}
		p := st.DecodeParts
		rep.Phases = t.Table(map[bench.Phase]int64{
			bench.PhaseDeltaNet:  p.DeltaNet + st.StateBytesPerToken,
			bench.PhaseAttention: p.Attention + int64(float64(kv)*bench.MeanContext(n, opt.DecodeTokens)),
			bench.PhaseMoE:       p.MoE,
			bench.PhaseLMHead:    p.LMHead,
		}, read)
		rep.PhasesTest, rep.PhasesReadGBs = fmt.Sprintf("tg%d@d%d", opt.DecodeTokens, n), read
	}
	if gpu, ok := l.backend.(interface{ Device() device.Device }); ok {
		bw, err := device.MeasureCopyBandwidth(gpu.Device())
		if err != nil {
			return rep, fmt.Errorf("backend %s: device copy bandwidth: %w", s.name, err)
		}
		cfg := l.ck.Config
		err = rep.AgainstModel(bw/1e9, func(n int) (float64, float64, error) { return perfmodel.Expected(cfg, bw, r.gpuPeak*1e12, n) })
		if err != nil {
			return rep, fmt.Errorf("backend %s: performance model: %w", s.name, err)
		}
		fmt.Fprintf(r.progress, "lily bench: %s, profiling a decode step kernel by kernel…\n", s.name)
		if rep.Kernels, err = kernelRows(l.backend, cfg, bw); err != nil {
			return rep, fmt.Errorf("backend %s: kernel profile: %w", s.name, err)
		}
	}
	return rep, nil
}

// cpuProfile is --cpuprofile: started once, when the first backend is ready to measure, and
// stopped after the last one's measurement, so with several backends it also holds the opening of
// the later ones (mapping the checkpoint again).
type cpuProfile struct {
	path string // "" when no profile was asked for
	f    *os.File
}

// start begins the profile the first time it is called; later calls do nothing.
func (p *cpuProfile) start() error {
	if p.path == "" || p.f != nil {
		return nil
	}
	f, err := os.Create(p.path)
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("cpu profile: %w", err)
	}
	p.f = f
	return nil
}

// stop ends the profile and closes its file; it does nothing when none is running.
func (p *cpuProfile) stop() error {
	if p.f == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := p.f.Close()
	p.f = nil
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	return nil
}
