package device

import (
	"testing"
	"time"
)

// timedDevice is a device whose command buffers take a fixed GPU time and a far longer wall time.
type timedDevice struct {
	Device
	gpu time.Duration
}

type sizedBuffer int

func (b sizedBuffer) Len() int { return int(b) }

func (d *timedDevice) Alloc(n int, _ Storage) (Buffer, error) { return sizedBuffer(n), nil }
func (d *timedDevice) Free(Buffer)                            {}
func (d *timedDevice) Run([]Command) error {
	time.Sleep(50 * time.Millisecond)
	return nil
}
func (d *timedDevice) RunTimed(cmds []Command) (time.Duration, error) {
	return d.gpu, d.Run(cmds)
}

// TestBandwidthUsesGPUTime checks that the bandwidth probe divides by the GPU's own time where the
// device reports it, not by the wall clock around the command buffer.
func TestBandwidthUsesGPUTime(t *testing.T) {
	d := &timedDevice{gpu: 4 * time.Millisecond}
	bw, err := MeasureCopyBandwidth(d)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * copyBytes / d.gpu.Seconds(); bw != want {
		t.Fatalf("bandwidth %g B/s, want %g (2 × %d bytes in %v of GPU time)", bw, want, copyBytes, d.gpu)
	}
}
