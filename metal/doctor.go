package metal

import (
	"context"
	"time"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/metal/device"
)

// Footprint is what the model needs on its device, computed before loading.
func (e *Model) Footprint() Footprint { return e.foot }

// planDevice records the dispatches of the plans without memory or kernels: buffers are sizes,
// and limits and pipeline limits are those of the device it stands for.
type planDevice struct {
	of      device.Device
	threads map[string]int
}

type sized int

func (b sized) Len() int { return int(b) }

func (d *planDevice) Name() string                                         { return "plan" }
func (d *planDevice) Alloc(n int, _ device.Storage) (device.Buffer, error) { return sized(n), nil }
func (d *planDevice) Wrap(b []byte, _ bool) (device.Buffer, int, error) {
	return sized(len(b)), 0, nil
}
func (d *planDevice) Upload(device.Buffer, int, []byte) error         { return nil }
func (d *planDevice) Download(b []byte, _ device.Buffer, _ int) error { clear(b); return nil }
func (d *planDevice) Free(device.Buffer)                              {}
func (d *planDevice) Close() error                                    { return nil }
func (d *planDevice) Limits() device.Limits                           { return d.of.Limits() }
func (d *planDevice) MaxThreads(k string) (int, error)                { return d.of.MaxThreads(k) }
func (d *planDevice) Run(cmds []device.Command) error {
	if err := device.Check(cmds); err != nil {
		return err
	}
	for _, c := range cmds {
		if k, ok := c.(*device.Dispatch); ok {
			d.threads[k.Kernel] = max(d.threads[k.Kernel], k.Threads[0]*k.Threads[1]*k.Threads[2])
		}
	}
	return nil
}

// ThreadNeeds returns, for every kernel the model's plans dispatch (a full prefill chunk and a
// decode step), the most threads per threadgroup a dispatch of it asks for on dev, whose
// pipeline limits size the adaptive kernels. Nothing runs and nothing is uploaded.
func ThreadNeeds(w *checkpoint.Weights, dev device.Device) (map[string]int, error) {
	pd := &planDevice{of: dev, threads: map[string]int{}}
	// A context one past the largest chunk, so that a full chunk and a decode step both fit.
	e, err := newModel(w, pd, min(w.Config.MaxPositionEmbeddings, maxChunk+1))
	if err != nil {
		return nil, err
	}
	defer e.Close()
	s, err := e.newSession()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	toks := make([]int32, min(e.chunk, e.maxCtx-1)) // leaves room for the decode step
	if _, err := s.Prefill(context.Background(), toks, engine.StepOptions{}, nil); err != nil {
		return nil, err
	}
	if _, err := s.Decode(context.Background(), 0, engine.StepOptions{}); err != nil {
		return nil, err
	}
	return pd.threads, nil
}

// DecodeTimed is Decode that also returns the GPU's own time for the step's command buffer where
// the device measures it (gpuOK), for `lily doctor`'s CPU-encode vs GPU comparison.
func (s *Session) DecodeTimed(ctx context.Context, tok int32, o engine.StepOptions) (r engine.StepResult, gpu time.Duration, gpuOK bool, err error) {
	s.timed = true
	defer func() { s.timed = false }()
	r, err = s.Decode(ctx, tok, o)
	return r, s.gpu, s.gpuOK, err
}
