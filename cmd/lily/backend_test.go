package main

import (
	"strings"
	"testing"
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
