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
