package metal

import (
	"testing"

	"github.com/lily-engine/lily/metal/device"
)

// countingDevice is the plan-only emulator device that also runs copies (the only commands a
// snapshot needs) and counts live buffers.
type countingDevice struct {
	*device.EmuDevice
	live, freed int
}

func (d *countingDevice) Alloc(n int, s device.Storage) (device.Buffer, error) {
	b, err := d.EmuDevice.Alloc(n, s)
	if err == nil {
		d.live++
	}
	return b, err
}

func (d *countingDevice) Free(b device.Buffer) {
	d.live--
	d.freed++
	d.EmuDevice.Free(b)
}

func (d *countingDevice) Run(cmds []device.Command) error {
	for _, c := range cmds {
		c := c.(*device.Copy)
		b := make([]byte, c.N)
		if err := d.Download(b, c.Src, c.SrcOff); err != nil {
			return err
		}
		if err := d.Upload(c.Dst, c.DstOff, b); err != nil {
			return err
		}
	}
	return nil
}

// TestSnapshotRelease: Release frees the snapshot's device buffers at once, a second Release frees
// nothing more, and a released snapshot is refused by Restore.
func TestSnapshotRelease(t *testing.T) {
	dev := &countingDevice{EmuDevice: &device.EmuDevice{}}
	e, err := newModel(openTest(t, "mlx").Weights, dev, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s, err := e.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := dev.live
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if dev.live <= before {
		t.Fatalf("snapshot allocated nothing (%d live buffers before, %d after)", before, dev.live)
	}
	if err := s.Restore(snap); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if dev.live != before {
		t.Fatalf("%d live buffers after Release, %d before the snapshot", dev.live, before)
	}
	freed := dev.freed
	snap.Release()
	if dev.freed != freed {
		t.Fatalf("a second Release freed %d more buffers", dev.freed-freed)
	}
	if err := s.Restore(snap); err == nil {
		t.Fatal("a released snapshot was restored")
	}
}
