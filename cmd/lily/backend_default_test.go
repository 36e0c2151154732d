package main

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/metal/device"
)

// fakeBackend is a stand-in engine.Backend that only names itself.
type fakeBackend struct {
	engine.Backend
	name string
}

// TestDefaultDeviceFallsBackOnlyWithoutGPU: with no --device, only "no Metal GPU" falls back to the
// CPU; a kernel compile error (any other Metal error) is returned; each choice is logged with why.
func TestDefaultDeviceFallsBackOnlyWithoutGPU(t *testing.T) {
	cpu := func() (engine.Backend, error) { return fakeBackend{name: "cpu"}, nil }
	for _, c := range []struct {
		name     string
		metalErr error
		want     string // backend chosen, or "" for an error
		log      string
	}{
		{"gpu present", nil, "metal", "device metal"},
		{"no gpu", fmt.Errorf("%w: this is linux/amd64", device.ErrNoMetal), "cpu", "device cpu (the default: metal: no Metal GPU: this is linux/amd64)"},
		{"compile error", errors.New("metal: compiling the kernel library: error: use of undeclared identifier"), "", ""},
	} {
		var log bytes.Buffer
		metal := func() (engine.Backend, error) {
			if c.metalErr != nil {
				return nil, c.metalErr
			}
			return fakeBackend{name: "metal"}, nil
		}
		b, err := defaultDevice(metal, cpu, &log)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%s: fell back to %s instead of failing", c.name, b.(fakeBackend).name)
		case c.want == "" && !strings.Contains(err.Error(), "undeclared identifier"):
			t.Errorf("%s: error %v does not carry the Metal error", c.name, err)
		case c.want != "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && b.(fakeBackend).name != c.want:
			t.Errorf("%s: chose %s, want %s", c.name, b.(fakeBackend).name, c.want)
		case !strings.Contains(log.String(), c.log):
			t.Errorf("%s: log %q, want it to contain %q", c.name, log.String(), c.log)
		}
	}
}

// TestOpenBackend opens the fast backend with the default device on a fixture: on darwin/arm64 it
// must be the Metal GPU (a failure to open it fails the test, it does not skip); elsewhere the CPU,
// with the reason logged.
func TestOpenBackend(t *testing.T) {
	var log bytes.Buffer
	l, err := openBackend(benchFixture, backendSpec{name: "fast", ctxSize: 64, log: &log})
	if err != nil {
		t.Fatalf("default device: %v", err)
	}
	defer l.close()
	want := "cpu"
	if runtime.GOOS == "darwin" && runtime.GOARCH == "arm64" {
		want = "metal"
	}
	if got := deviceOf(backendSpec{name: "fast"}, l.backend); got != want {
		t.Fatalf("default device on %s/%s is %s, want %s (log: %s)", runtime.GOOS, runtime.GOARCH, got, want, log.String())
	}
	if !strings.Contains(log.String(), "lily: device "+want) {
		t.Errorf("startup log %q does not name device %s", log.String(), want)
	}
}
