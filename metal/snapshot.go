package metal

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/metal/device"
)

// snapshot is a device copy of a session's state: the recurrent buffer and the used KV rows.
type snapshot struct {
	e    *Model
	pos  int
	rec  device.Buffer
	k, v []device.Buffer
	// owned frees the buffers once: by Release, or by the garbage collector for a snapshot dropped
	// without one.
	owned *ownedBuffers
	stop  runtime.Cleanup
}

func (p *snapshot) Len() int { return p.pos }

// ownedBuffers are device buffers freed at most once.
type ownedBuffers struct {
	mu   sync.Mutex
	dev  device.Device
	bufs []device.Buffer
}

func (o *ownedBuffers) free() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, b := range o.bufs {
		o.dev.Free(b)
	}
	o.bufs = nil
}

// Release frees the snapshot's device buffers now; it cannot be restored afterwards.
func (p *snapshot) Release() {
	if p.owned == nil {
		return
	}
	p.stop.Stop()
	p.owned.free()
	p.rec, p.k, p.v, p.owned = nil, nil, nil, nil
}

// Snapshot copies the state on the device. Release frees the copy's buffers (the garbage collector
// does for a snapshot dropped without it).
func (s *Session) Snapshot() (engine.Snapshot, error) {
	if s.st == nil {
		return nil, errors.New("metal: session is closed")
	}
	dev, st := s.e.dev, s.st
	p := &snapshot{e: s.e, pos: s.pos, k: make([]device.Buffer, len(st.k)), v: make([]device.Buffer, len(st.v))}
	var bufs []device.Buffer
	fail := func(err error) (engine.Snapshot, error) {
		for _, b := range bufs {
			dev.Free(b)
		}
		return nil, fmt.Errorf("metal: snapshot: %w", err)
	}
	rec, err := dev.Alloc(st.rec.Len(), device.Private)
	if err != nil {
		return fail(err)
	}
	bufs = append(bufs, rec)
	p.rec = rec
	cmds := []device.Command{&device.Copy{Src: st.rec, Dst: rec, N: rec.Len()}}
	for i, kind := range st.layers {
		if kind != checkpoint.FullAttention || s.pos == 0 {
			continue
		}
		for _, kv := range [][2]*device.Buffer{{&st.k[i], &p.k[i]}, {&st.v[i], &p.v[i]}} {
			b, err := dev.Alloc(s.pos*st.kvRow, device.Private)
			if err != nil {
				return fail(err)
			}
			bufs = append(bufs, b)
			*kv[1] = b
			cmds = append(cmds, &device.Copy{Src: *kv[0], Dst: b, N: s.pos * st.kvRow})
		}
	}
	if err := dev.Run(cmds); err != nil {
		return fail(err)
	}
	p.owned = &ownedBuffers{dev: dev, bufs: bufs}
	p.stop = runtime.AddCleanup(p, (*ownedBuffers).free, p.owned)
	return p, nil
}

// Restore replaces the state with a snapshot taken from a session of the same engine.
func (s *Session) Restore(x engine.Snapshot) error {
	p, ok := x.(*snapshot)
	if !ok || p.e != s.e {
		return errors.New("metal: snapshot is from another backend or engine")
	}
	if s.st == nil {
		return errors.New("metal: session is closed")
	}
	if p.owned == nil {
		return errors.New("metal: restore of a released snapshot")
	}
	st := s.st
	cmds := []device.Command{&device.Copy{Src: p.rec, Dst: st.rec, N: st.rec.Len()}}
	for i := range st.layers {
		if p.k[i] != nil {
			cmds = append(cmds, &device.Copy{Src: p.k[i], Dst: st.k[i], N: p.pos * st.kvRow},
				&device.Copy{Src: p.v[i], Dst: st.v[i], N: p.pos * st.kvRow})
		}
	}
	if err := s.e.dev.Run(cmds); err != nil {
		return fmt.Errorf("metal: restore: %w", err)
	}
	runtime.KeepAlive(p)
	s.pos = p.pos
	return nil
}
