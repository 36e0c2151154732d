package main

import (
	"fmt"
	"io"

	"github.com/lily-engine/lily/internal/bench"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/metal"
	"github.com/lily-engine/lily/metal/perfmodel"
)

// kernelRows profiles one decode step of a Metal backend, kernel by kernel, and puts the honest
// performance model's time for each next to it: the model's M5 Max figures with the device's
// measured copy bandwidth bw (bytes/s), priced from this model's own plans.
func kernelRows(b engine.Backend, cfg *checkpoint.Config, bw float64) ([]bench.KernelRow, error) {
	m, ok := b.(*metal.Model)
	if !ok {
		return nil, fmt.Errorf("backend %s is not the Metal engine", b.Name())
	}
	measured, err := m.ProfileDecode()
	if err != nil {
		return nil, err
	}
	pc, err := m.PlanCounts()
	if err != nil {
		return nil, err
	}
	gpu := perfmodel.M5MaxGPU()
	if bw > 0 {
		gpu.Bandwidth = bw
	}
	modelled, err := perfmodel.NewHonest(gpu, cfg, pc).DecodeKernels(0)
	if err != nil {
		return nil, err
	}
	us := map[string]float64{}
	for _, k := range modelled {
		us[k.Kernel] = k.Seconds * 1e6
	}
	rows := make([]bench.KernelRow, 0, len(measured))
	for _, k := range measured {
		rows = append(rows, bench.KernelRow{Kernel: k.Kernel, Dispatches: k.Dispatches,
			MeasuredUS: float64(k.Time.Nanoseconds()) / 1e3, ModelledUS: us[k.Kernel]})
	}
	return rows, nil
}

// printKernels prints a profiled decode step's kernels, measured against modelled.
func printKernels(w io.Writer, rows []bench.KernelRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "decode step by kernel (one command buffer per dispatch: GPU time on Metal, wall clock on metal-emu)")
	fmt.Fprintf(w, "%-22s %10s %14s %14s %10s\n", "kernel", "dispatches", "measured µs", "modelled µs", "ratio")
	var m, p float64
	for _, r := range rows {
		ratio := "—"
		if r.ModelledUS > 0 {
			ratio = fmt.Sprintf("%.2f×", r.MeasuredUS/r.ModelledUS)
		}
		fmt.Fprintf(w, "%-22s %10d %14.1f %14.1f %10s\n", r.Kernel, r.Dispatches, r.MeasuredUS, r.ModelledUS, ratio)
		m, p = m+r.MeasuredUS, p+r.ModelledUS
	}
	fmt.Fprintf(w, "%-22s %10s %14.1f %14.1f %9.2f×\n", "total", "", m, p, m/p)
}
