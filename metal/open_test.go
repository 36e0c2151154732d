package metal

import (
	"errors"
	"runtime"
	"testing"

	"github.com/lily-engine/lily/metal/device"
)

// TestOpen checks the device names: an unknown one is an error, "metal" fails clearly
// off darwin (and works on a Mac with a GPU), "metal-emu" runs the emulator.
func TestOpen(t *testing.T) {
	w := openTest(t, "mlx").Weights
	if _, err := Open(w, Options{Device: "cuda", MaxContext: 0}); err == nil {
		t.Error("unknown device accepted")
	}
	b, err := Open(w, Options{Device: "metal", MaxContext: 0})
	switch {
	case runtime.GOOS != "darwin" && !errors.Is(err, device.ErrNoMetal):
		t.Errorf("metal on %s: %v, want device.ErrNoMetal", runtime.GOOS, err)
	case err == nil:
		if b.Name() != "metal" {
			t.Errorf("name %q", b.Name())
		}
		b.Close()
	case !errors.Is(err, device.ErrNoMetal):
		t.Errorf("metal: %v", err)
	}
	if testing.Short() {
		return // metal-emu compiles the kernels with g++
	}
	b, err = Open(w, Options{Device: "metal-emu", MaxContext: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Name() != "metal-emu" || b.MaxContext() != 64 {
		t.Errorf("metal-emu backend reports %s/%d", b.Name(), b.MaxContext())
	}
	if _, err := Open(openTest(t, "hf").Weights, Options{Device: "metal-emu"}); !errors.Is(err, ErrDenseLayout) {
		t.Errorf("dense layout through Open: %v", err)
	}
}
