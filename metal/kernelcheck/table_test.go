package kernelcheck

import (
	"encoding/binary"
	"testing"

	"github.com/lily-engine/lily/metal/device"
	"github.com/lily-engine/lily/metal/emu"
)

// TestKernelTableCoversLibrary: every kernel the library defines has a doctor table entry, and
// every kernel an entry names is in the library.
func TestKernelTableCoversLibrary(t *testing.T) {
	ks, err := emu.ParseKernels(device.Source())
	if err != nil {
		t.Fatal(err)
	}
	lib := map[string]bool{}
	for _, k := range ks {
		lib[k.Name] = true
	}
	covered := map[string]bool{}
	for _, c := range kernelTable() {
		if c.Run == nil || len(c.Kernels) == 0 {
			t.Errorf("entry %s: no Run or no kernels", c.Name)
		}
		for _, k := range c.Kernels {
			if !lib[k] {
				t.Errorf("entry %s names kernel %s, which the library does not define", c.Name, k)
			}
			covered[k] = true
		}
	}
	for k := range lib {
		if !covered[k] {
			t.Errorf("kernel %s has no entry in the doctor table (kernelTable)", k)
		}
	}
}

func newEmuForTable(t *testing.T) device.Device {
	t.Helper()
	if testing.Short() {
		t.Skip("compiles the kernel library with g++ and runs every kernel at the real sizes (~1 min); skipped in -short")
	}
	if raceEnabled {
		t.Skip("the real-size reference computations take minutes under the race detector, and the emulator runs in another process (no Go races to find); run without -race")
	}
	dev, err := device.NewEmuDevice()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

// TestCheckKernelsEmu: every kernel of the table passes at the real sizes on the emulator.
func TestCheckKernelsEmu(t *testing.T) {
	dev := newEmuForTable(t)
	rs, err := CheckKernels(dev)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(kernelTable()) {
		t.Fatalf("%d results for %d entries", len(rs), len(kernelTable()))
	}
	for _, r := range rs {
		if r.Err != nil {
			t.Errorf("%s (%s): %v", r.Name, r.Sizes, r.Err)
			continue
		}
		if r.MaxRel > r.Budget {
			t.Errorf("%s: max relative error %.3g over its budget %.3g without a failure", r.Name, r.MaxRel, r.Budget)
		}
		t.Logf("%-13s %-10v max rel %.2g (budget %.2g) %s  [%s]", r.Name, r.Elapsed.Round(1e6), r.MaxRel, r.Budget, r.Sizes, r.Kernels)
	}
}

// corruptDevice returns wrong results: every download has one word in its middle changed (a
// mantissa bit of a float, a large offset to an integer id).
type corruptDevice struct{ device.Device }

func (d corruptDevice) Download(dst []byte, src device.Buffer, off int) error {
	if err := d.Device.Download(dst, src, off); err != nil {
		return err
	}
	if len(dst) >= 4 {
		i := len(dst) / 2 &^ 3
		binary.LittleEndian.PutUint32(dst[i:], binary.LittleEndian.Uint32(dst[i:])^0x00400000)
	}
	return nil
}

// TestCheckKernelsCatchesWrongResults: on a device whose results are slightly wrong, every entry
// of the table fails.
func TestCheckKernelsCatchesWrongResults(t *testing.T) {
	dev := newEmuForTable(t)
	cfg, err := RealConfig()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := runKernelChecks(corruptDevice{dev}, cfg, kernelTable())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Err == nil {
			t.Errorf("%s passed on a device that corrupts every result (max rel %.3g)", r.Name, r.MaxRel)
			continue
		}
		t.Logf("%s: %v", r.Name, r.Err)
	}
}
