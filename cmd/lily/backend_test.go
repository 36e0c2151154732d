package main

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestInt16ActivationsOnlyOnFastCPU: the flag means nothing to ref or to Metal, so asking for it
// there is an error rather than a silent no-op. The spec is checked before the checkpoint is read.
func TestInt16ActivationsOnlyOnFastCPU(t *testing.T) {
	for _, s := range []backendSpec{
		{name: "ref", int16: true},
		{name: "fast", device: "metal", int16: true},
		{name: "fast", device: "metal-emu", int16: true},
	} {
		if _, err := buildBackend(nil, s); err == nil || !strings.Contains(err.Error(), "--int16-activations") {
			t.Errorf("%+v: err %v, want the --int16-activations error", s, err)
		}
	}
}

// TestSpecCheck: check accepts every backend on the devices it runs on and names what is wrong
// otherwise, without a checkpoint.
func TestSpecCheck(t *testing.T) {
	for _, s := range []backendSpec{
		{name: "ref"}, {name: "ref", device: "cpu"}, {name: "fast"}, {name: "fast", device: "cpu", int16: true},
		{name: "fast", device: "metal"}, {name: "fast", device: "metal-emu"},
	} {
		if err := s.check(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
	for _, c := range []struct {
		s   backendSpec
		msg string
	}{
		{backendSpec{name: "ref", device: "metal"}, "backend ref runs on the cpu only"},
		{backendSpec{name: "fast", device: "tpu"}, `unknown --device "tpu"`},
		{backendSpec{name: "gpu"}, `unknown backend "gpu"`},
	} {
		if err := c.s.check(); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: err %v, want %q", c.s, err, c.msg)
		}
	}
}

// TestCtxSizeSetsMaxContext: --ctx-size reaches every backend as its MaxContext, the one window
// the engine and the server check requests against (serve passes it nowhere else).
func TestCtxSizeSetsMaxContext(t *testing.T) {
	for _, s := range []backendSpec{{name: "ref", ctxSize: 48}, {name: "fast", device: "cpu", ctxSize: 48},
		{name: "fast", device: "metal-emu", ctxSize: 48}} {
		l, err := openBackend(benchFixture, s)
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		got := l.backend.MaxContext()
		if err := l.close(); err != nil {
			t.Fatal(err)
		}
		if got != 48 {
			t.Fatalf("%+v: MaxContext %d, want 48", s, got)
		}
	}
}

// TestFastCPUBackendCloseStopsWorkers: bench opens backends one after another in one process, so
// closing the fast cpu backend must stop its worker pool, not leave its goroutines behind.
func TestFastCPUBackendCloseStopsWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	l, err := openBackend(benchFixture, backendSpec{name: "fast", device: "cpu", ctxSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	if runtime.NumGoroutine() <= before {
		t.Skip("this machine runs the pool without background workers")
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after close, %d before open", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMachineBest(t *testing.T) {
	a, b := machine{memReadGBs: 14, peakGFLOPs: 60}, machine{memReadGBs: 26, peakGFLOPs: 55}
	if got := a.best(b); got != (machine{26, 60}) || b.best(a) != got {
		t.Fatalf("best of %+v and %+v: %+v", a, b, got)
	}
}
