package metal

import (
	"errors"
	"io"
	"runtime"
	"testing"
)

// TestOpenBackend checks the device names: an unknown one is an error, "metal" fails clearly
// off darwin (and works on a Mac with a GPU), "metal-emu" runs the emulator.
func TestOpenBackend(t *testing.T) {
	w := openTest(t, "mlx").Weights
	if _, err := OpenBackend(w, "cuda", 0); err == nil {
		t.Error("unknown device accepted")
	}
	b, err := OpenBackend(w, "metal", 0)
	switch {
	case runtime.GOOS != "darwin" && !errors.Is(err, ErrNoMetal):
		t.Errorf("metal on %s: %v, want ErrNoMetal", runtime.GOOS, err)
	case err == nil:
		if b.Name() != "metal" {
			t.Errorf("name %q", b.Name())
		}
		b.(io.Closer).Close()
	case !errors.Is(err, ErrNoMetal):
		t.Errorf("metal: %v", err)
	}
	if testing.Short() {
		return // metal-emu compiles the kernels with g++
	}
	b, err = OpenBackend(w, "metal-emu", 64)
	if err != nil {
		t.Fatal(err)
	}
	defer b.(io.Closer).Close()
	if b.Name() != "metal-emu" || b.MaxContext() != 64 {
		t.Errorf("metal-emu backend reports %s/%d", b.Name(), b.MaxContext())
	}
	if _, err := OpenBackend(openTest(t, "hf").Weights, "metal-emu", 0); !errors.Is(err, ErrDenseLayout) {
		t.Errorf("dense layout through OpenBackend: %v", err)
	}
}
