package metal

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/trace"
	"github.com/lily-engine/lily/metal/device"
)

// Observe attaches o to the session (nil detaches it): every later step reports its named
// intermediates (package trace) to o. With none attached a step's plan runs as one command
// buffer; with one, runObserved runs the same commands in pieces and reads the buffers between.
func (s *Session) Observe(o trace.Observer) { s.obs = o }

var _ trace.Observable = (*Session)(nil)

// run runs one step's plan for the tokens at positions pos..: in pieces with the device's buffers
// read between them when an observer is attached, else as one command buffer, timed on the GPU when
// DecodeTimed asked for it.
func (s *Session) run(cmds []device.Command, pos int) error {
	if s.obs != nil {
		o := &observed{s: s, cmds: cmds, pos: pos}
		return o.runObserved()
	}
	if !s.timed {
		return s.e.dev.Run(cmds)
	}
	var err error
	s.gpu, s.gpuOK, err = device.RunGPUTimed(s.e.dev, cmds)
	return err
}

// observeLogits reports the last processed position's logits (after readback).
func (s *Session) observeLogits() {
	if s.obs != nil {
		s.obs.Rows(trace.Model(trace.Logits), s.pos-1, 1, s.logits)
	}
}

// observed is the state of one observed step: the plan, how far it has run, the device reads.
type observed struct {
	s    *Session
	cmds []device.Command
	next int // the first command not yet run
	pos  int
	raw  []byte
}

// runTo runs the plan's commands up to (not including) i.
func (o *observed) runTo(i int) error {
	if i > o.next {
		if err := o.s.e.dev.Run(o.cmds[o.next:i]); err != nil {
			return err
		}
		o.next = i
	}
	return nil
}

// read downloads a float32 window: [Len/4].
func (o *observed) read(a device.Arg) ([]float32, error) {
	if cap(o.raw) < a.Len {
		o.raw = make([]byte, a.Len)
	}
	b := o.raw[:a.Len]
	if err := o.s.e.dev.Download(b, a.Buf, a.Off); err != nil {
		return nil, err
	}
	x := make([]float32, a.Len/4)
	floats(x, b)
	return x, nil
}

// write uploads x into a's window (the tests' injected error reaching the rest of the plan).
func (o *observed) write(a device.Arg, x []float32) error {
	b := make([]byte, 0, 4*len(x))
	for _, v := range x {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return o.s.e.dev.Upload(a.Buf, a.Off, b)
}

// report shows x (rows of H) as point p and writes it back to a when the observer changed it.
func (o *observed) report(p trace.Point, a device.Arg, x []float32) error {
	before := slices.Clone(x)
	o.s.obs.Rows(p, o.pos, len(x)/o.s.e.sizes.h, x)
	if slices.Equal(before, x) {
		return nil
	}
	return o.write(a, x)
}

// delta reports d = after − before as point p (a mixer or MoE output, which the plan adds into
// the residual in place); where the observer changes d, after becomes before + d on the device.
func (o *observed) delta(p trace.Point, a device.Arg, before, after []float32) error {
	d := make([]float32, len(after))
	for i := range d {
		d[i] = after[i] - before[i]
	}
	orig := slices.Clone(d)
	o.s.obs.Rows(p, o.pos, len(d)/o.s.e.sizes.h, d)
	if slices.Equal(orig, d) {
		return nil
	}
	for i := range d {
		if d[i] != orig[i] {
			after[i] = before[i] + d[i]
		}
	}
	return o.write(a, after)
}

// runObserved runs a decode or prefill plan in pieces, reporting each point between them. It finds
// the points from the plan's own commands: embed first; per layer the input rms_norm (its input
// is the layer input h, its output the input norm), the mixer's commands, which end by adding into
// h, the post rms_norm, router_softmax_topk, and the MoE's, which end by adding into h; the final
// rms_norm (in the last prefill chunk and in decode only). In decode the norms are fused into their
// consumers and these rms_norms write rows only the observer reads (norm_fused.go).
// A mixer's and a MoE block's outputs are the differences of h around them (the plan never holds
// them apart), within float32 rounding of h. The router's logits are router_softmax_topk's input.
func (o *observed) runObserved() error {
	e, sz := o.s.e, &o.s.e.sizes
	var norms, routers []int
	for i, c := range o.cmds {
		if d, ok := c.(*device.Dispatch); ok {
			switch d.Kernel {
			case "rms_norm":
				norms = append(norms, i)
			case "router_softmax_topk":
				routers = append(routers, i)
			}
		}
	}
	emb, ok := o.cmds[0].(*device.Dispatch)
	nl := len(e.w.layers)
	head := len(norms) == 2*nl+1 // a prefill chunk before the last has no final norm and lm_head
	if !ok || emb.Kernel != "embed" || (len(norms) != 2*nl && !head) || len(routers) != nl {
		return fmt.Errorf("metal: observed plan: %d rms_norm and %d router_softmax_topk dispatches for %d layers", len(norms), len(routers), nl)
	}
	arg := func(i, j int) device.Arg { return o.cmds[i].(*device.Dispatch).Args[j] }
	if err := o.runTo(1); err != nil {
		return err
	}
	h, err := o.read(emb.Args[4])
	if err != nil {
		return err
	}
	if err := o.report(trace.Model(trace.Embed), emb.Args[4], h); err != nil {
		return err
	}
	for l := range nl {
		in, post, rt := norms[2*l], norms[2*l+1], routers[l]
		end := len(o.cmds) // where layer l's MoE block has ended: the next norm, else the plan's end
		if 2*l+2 < len(norms) {
			end = norms[2*l+2]
		}
		steps := []struct {
			at   int
			p    trace.Point
			a    device.Arg
			mode int // 0: report a row; 1: the mixer; 2: the MoE block
		}{
			{in + 1, trace.At(l, trace.InputNorm), arg(in, 2), 0},
			{post, trace.At(l, mixerSite(e.w.layers[l].kind)), arg(post, 0), 1},
			{post + 1, trace.At(l, trace.PostNorm), arg(post, 2), 0},
			{end, trace.At(l, trace.MoEOut), arg(post, 0), 2},
		}
		for _, st := range steps {
			if err := o.runTo(st.at); err != nil {
				return err
			}
			x, err := o.read(st.a)
			if err != nil {
				return err
			}
			switch st.mode {
			case 0:
				err = o.report(st.p, st.a, x)
			default:
				resid := trace.At(l, trace.MixerResid)
				if st.mode == 2 {
					resid = trace.At(l, trace.MoEResid)
				}
				if err = o.delta(st.p, st.a, h, x); err == nil {
					err = o.report(resid, st.a, x)
				}
				h = x
			}
			if err != nil {
				return err
			}
			if st.mode == 0 && st.p.Site == trace.PostNorm {
				if err := o.runTo(rt + 1); err != nil {
					return err
				}
				if err := o.route(l, rt); err != nil {
					return err
				}
			}
		}
	}
	if !head {
		return o.runTo(len(o.cmds))
	}
	fin := norms[2*nl]
	if err := o.runTo(fin + 1); err != nil {
		return err
	}
	x, err := o.read(arg(fin, 2))
	if err != nil {
		return err
	}
	rows := len(x) / sz.h
	o.s.obs.Rows(trace.Model(trace.FinalNorm), o.pos+len(h)/sz.h-rows, rows, x) // the head may norm the last row only
	return o.runTo(len(o.cmds))
}

// route reports layer l's router: the logits, ids and weights of router_softmax_topk (command rt).
func (o *observed) route(l, rt int) error {
	e, sz := o.s.e, &o.s.e.sizes
	d := o.cmds[rt].(*device.Dispatch)
	lg, idsArg, wtsArg := d.Args[0], d.Args[1], d.Args[2]
	t := lg.Len / (4 * sz.e)
	logits, err := o.read(lg)
	if err != nil {
		return err
	}
	w, err := o.read(device.Arg{Buf: wtsArg.Buf, Off: wtsArg.Off, Len: 4 * t * sz.k})
	if err != nil {
		return err
	}
	raw := make([]byte, 4*t*sz.k)
	if err := e.dev.Download(raw, idsArg.Buf, idsArg.Off); err != nil {
		return err
	}
	ids := make([]int, t*sz.k)
	for i := range ids {
		ids[i] = int(int32(binary.LittleEndian.Uint32(raw[4*i:])))
	}
	o.s.obs.Route(l, o.pos, t, logits, ids, w)
	return nil
}

// mixerSite is the point name of a layer kind's mixer output.
func mixerSite(k checkpoint.LayerKind) trace.Site {
	if k == checkpoint.LinearAttention {
		return trace.DeltaNetOut
	}
	return trace.AttentionOut
}
