package device

import (
	"os/exec"
	"testing"
)

// TestABIProbeOnEmulator runs the probe on the emulator, where the builtins are what the Metal
// specification says; a device that reported them otherwise would fail it.
func TestABIProbeOnEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the kernels with g++; skipped in -short")
	}
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("the Metal kernel emulator needs g++, which is not installed")
	}
	dev, err := NewEmuDevice()
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if err := ABIProbe(dev); err != nil {
		t.Fatal(err)
	}
}
