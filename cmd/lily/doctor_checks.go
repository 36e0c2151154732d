// The checks of `lily doctor`, in the order they run; each records PASS, FAIL or SKIP with why.

package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/metal"
	"github.com/lily-engine/lily/metal/device"
	"github.com/lily-engine/lily/metal/emu"
	"github.com/lily-engine/lily/metal/kernelcheck"
	"github.com/lily-engine/lily/ref"
)

// doctorMinTop1 is the least top-1 agreement of the greedy generation with ref: the kernels hold
// 0.99 teacher-forced on the conformance models, and random-weight synth checkpoints have near-tied
// logits that the fp16 KV cache may flip, so a few of 32 steps may differ without a fault.
const doctorMinTop1 = 0.9

type doctorOptions struct {
	device, model   string
	ctxSize, tokens int
}

type doctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"` // PASS, FAIL or SKIP
	Detail string `json:"detail"`
}

type doctorReport struct {
	Device string        `json:"device"`
	OK     bool          `json:"ok"` // no check FAILed
	Checks []doctorCheck `json:"checks"`
}

func (r *doctorReport) add(name, status, format string, a ...any) {
	r.Checks = append(r.Checks, doctorCheck{Name: name, Status: status, Detail: fmt.Sprintf(format, a...)})
	if status == "FAIL" {
		r.OK = false
	}
}

// runDoctor runs every check on the device o names (and the checkpoint, when given).
func runDoctor(o doctorOptions) *doctorReport {
	r := &doctorReport{Device: o.device, OK: true}
	var dev device.Device
	var err error
	if o.device == "metal" {
		dev, err = device.NewMetalDevice()
	} else {
		dev, err = device.NewEmuDevice()
	}
	if err != nil {
		r.add("device", "FAIL", "%v", err)
		r.add("rest", "SKIP", "every other check needs the device")
		return r
	}
	defer dev.Close()
	lim := dev.Limits()
	r.add("device", "PASS", "%s (from %s); the kernel library compiled", dev.Name(), lim.Source)
	if v, err := macOSVersion(); err != nil {
		r.add("macos", "SKIP", "%v", err)
	} else {
		r.add("macos", "PASS", "macOS %s (mathMode and residency sets need 15+)", v)
	}
	if lim.MaxBufferLength <= 0 || lim.WorkingSet <= 0 {
		r.add("limits", "FAIL", "maxBufferLength %d, recommendedMaxWorkingSetSize %d", lim.MaxBufferLength, lim.WorkingSet)
	} else {
		r.add("limits", "PASS", "maxBufferLength %s, recommendedMaxWorkingSetSize %s; weights kept resident by %s",
			gibs(lim.MaxBufferLength), gibs(lim.WorkingSet), lim.Residency)
	}
	if mb, err := wiredLimitMB(); err != nil {
		r.add("wired_limit", "SKIP", "%v", err)
	} else if mb == 0 {
		r.add("wired_limit", "PASS", "iogpu.wired_limit_mb = 0 (the OS default share of memory)")
	} else {
		r.add("wired_limit", "PASS", "iogpu.wired_limit_mb = %d", mb)
	}
	r.add("page_size", "PASS", "%d bytes", os.Getpagesize())
	switch cl, ok := dev.(device.CompileLogger); {
	case !ok:
		r.add("compile_log", "SKIP", "%s does not collect compiler warnings (g++ compiles the emulator)", dev.Name())
	case cl.CompileLog() == "":
		r.add("compile_log", "PASS", "the kernel library compiled without warnings")
	default:
		r.add("compile_log", "PASS", "the kernel library compiled with warnings (send them): %s", cl.CompileLog())
	}
	if err := device.ABIProbe(dev); err != nil {
		r.add("abi_probe", "FAIL", "%v", err)
	} else {
		r.add("abi_probe", "PASS", "positions over a 3×5 grid of 7×3 threads, a window at byte 256, inline constants")
	}
	doctorKernels(r, dev)
	if o.model == "" {
		r.add("checkpoint", "SKIP", "no --model: pipelines, shards, memory, weights, generation and decode_timing need a checkpoint")
		return r
	}
	doctorCheckpoint(r, dev, o)
	return r
}

// doctorKernels runs every kernel of the library at the real model's sizes on random data
// against ref (kernelcheck.CheckKernels) and records one check per table entry, "kernel/<name>".
func doctorKernels(r *doctorReport, dev device.Device) {
	rs, err := kernelcheck.CheckKernels(dev)
	if err != nil {
		r.add("kernels", "FAIL", "%v", err)
		return
	}
	for _, k := range rs {
		name := "kernel/" + k.Name
		if k.Err != nil {
			r.add(name, "FAIL", "%s at %s: %v", strings.Join(k.Kernels, ", "), k.Sizes, k.Err)
			continue
		}
		r.add(name, "PASS", "max relative error %.2g (budget %.2g) at %s; %s in %v",
			k.MaxRel, k.Budget, k.Sizes, strings.Join(k.Kernels, ", "), k.Elapsed.Round(time.Millisecond))
	}
}

// doctorCheckpoint runs the checks that need the checkpoint at o.model.
func doctorCheckpoint(r *doctorReport, dev device.Device, o doctorOptions) {
	ck, err := checkpoint.Open(o.model)
	if err != nil {
		r.add("checkpoint", "FAIL", "%v", err)
		return
	}
	defer ck.Close()
	r.add("checkpoint", "PASS", "%s (%s layout)", ck.Dir, ck.Weights.Layout)
	needs, err := metal.ThreadNeeds(ck.Weights, dev)
	if err != nil {
		r.add("pipelines", "FAIL", "%v", err)
	} else {
		doctorPipelines(r, dev, needs)
	}
	doctorShards(r, ck.Dir)
	b, err := metal.Open(ck.Weights, metal.Options{Dev: dev, MaxContext: o.ctxSize})
	if err != nil {
		r.add("memory", "FAIL", "%v", err)
		return
	}
	defer b.Close()
	m := b.(*metal.Model)
	f, lim := m.Footprint(), dev.Limits()
	r.add("memory", "PASS", "needs %s (weights %s, KV at %d tokens %s, state %s, buffers %s) of a working set of %s",
		gibs(f.Total()), gibs(f.Weights), f.Ctx, gibs(f.KV), gibs(f.State), gibs(f.Buffers), gibs(lim.WorkingSet))
	r.add("weights", "PASS", "%s", m.Weights())
	doctorGenerate(r, m, ck.Weights, o.tokens)
}

// doctorPipelines compares each kernel's pipeline limit with what the plans dispatch.
func doctorPipelines(r *doctorReport, dev device.Device, needs map[string]int) {
	ks, err := emu.ParseKernels(device.Source())
	if err != nil {
		r.add("pipelines", "FAIL", "%v", err)
		return
	}
	var bad, all []string
	for _, k := range ks {
		limit, err := dev.MaxThreads(k.Name)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", k.Name, err))
			continue
		}
		need, used := needs[k.Name]
		if used && need > limit {
			bad = append(bad, fmt.Sprintf("%s needs %d threads, its pipeline allows %d", k.Name, need, limit))
		}
		if used {
			all = append(all, fmt.Sprintf("%s %d/%d", k.Name, need, limit))
		}
	}
	sort.Strings(all)
	if len(bad) > 0 {
		r.add("pipelines", "FAIL", "%s", strings.Join(bad, "; "))
		return
	}
	r.add("pipelines", "PASS", "threads needed/allowed: %s", strings.Join(all, ", "))
}

// doctorShards reports where each shard's data starts: MLX's writer leaves it unaligned, and the
// engine then copies that shard once instead of wrapping it.
func doctorShards(r *doctorReport, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	var parts []string
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			r.add("shards", "FAIL", "%v", err)
			return
		}
		var head [8]byte
		_, err = fh.ReadAt(head[:], 0)
		fh.Close()
		if err != nil {
			r.add("shards", "FAIL", "%s: %v", f, err)
			return
		}
		start := 8 + binary.LittleEndian.Uint64(head[:])
		how := "aligned: wrapped in place"
		if start%4 != 0 {
			how = "unaligned: wrapped in place, read at byte shifts"
		}
		parts = append(parts, fmt.Sprintf("%s data at byte %d (%s)", filepath.Base(f), start, how))
	}
	r.add("shards", "PASS", "%s", strings.Join(parts, "; "))
}

// doctorGenerate generates n tokens greedily on m and checks each step's top-1 against ref fed
// the same tokens; on a device with a GPU clock it also compares CPU encode time with GPU time.
func doctorGenerate(r *doctorReport, m *metal.Model, w *checkpoint.Weights, n int) {
	ctx := context.Background()
	rb, err := ref.Open(w, ref.Options{})
	if err != nil {
		r.add("generation", "FAIL", "ref: %v", err)
		return
	}
	defer rb.Close()
	ms, err := m.NewSession()
	if err != nil {
		r.add("generation", "FAIL", "%v", err)
		return
	}
	defer ms.Close()
	rs, err := rb.NewSession()
	if err != nil {
		r.add("generation", "FAIL", "ref: %v", err)
		return
	}
	defer rs.Close()
	prompt := make([]int32, 8)
	for i := range prompt {
		prompt[i] = int32(1 + 37*i%(m.VocabSize()-1))
	}
	n = min(n, m.MaxContext()-len(prompt))
	ml, err := ms.Prefill(ctx, prompt, engine.StepOptions{}, nil)
	if err != nil {
		r.add("generation", "FAIL", "prefill: %v", err)
		return
	}
	rl, err := rs.Prefill(ctx, prompt, engine.StepOptions{}, nil)
	if err != nil {
		r.add("generation", "FAIL", "ref prefill: %v", err)
		return
	}
	agree := 0
	var wall, gpu time.Duration
	timed := true
	toks := make([]int32, 0, n)
	for i := range n {
		tok := ml.Greedy
		if tok == rl.Greedy {
			agree++
		}
		toks = append(toks, tok)
		if i == n-1 {
			break
		}
		t0 := time.Now()
		var g time.Duration
		var ok bool
		ml, g, ok, err = ms.(*metal.Session).DecodeTimed(ctx, tok, engine.StepOptions{})
		wall += time.Since(t0)
		gpu += g
		timed = timed && ok
		if err != nil {
			r.add("generation", "FAIL", "decode %d: %v", i, err)
			return
		}
		if rl, err = rs.Decode(ctx, tok, engine.StepOptions{}); err != nil {
			r.add("generation", "FAIL", "ref decode %d: %v", i, err)
			return
		}
	}
	frac := float64(agree) / float64(n)
	status := "PASS"
	if frac < doctorMinTop1 {
		status = "FAIL"
	}
	r.add("generation", status, "top-1 agreement with ref %d/%d (%.3f, budget %.2f) over a greedy generation of %d tokens: %v",
		agree, n, frac, doctorMinTop1, n, toks)
	steps := time.Duration(max(n-1, 1))
	switch {
	case n < 2:
		r.add("decode_timing", "SKIP", "needs --tokens ≥ 2")
	case !timed:
		r.add("decode_timing", "SKIP", "%s has no GPU clock (%v per decode step by the wall clock)", m.Name(), wall/steps)
	default:
		r.add("decode_timing", "PASS", "per decode step: GPU %v, CPU encode and wait %v (wall %v)", gpu/steps, (wall-gpu)/steps, wall/steps)
	}
}

// gibs formats a byte count in GiB, or MiB below one GiB.
func gibs(n int64) string {
	if n < 1<<30 {
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}

// osName is for the SKIP reasons of the macOS-only checks.
func osName() string { return runtime.GOOS + "/" + runtime.GOARCH }
