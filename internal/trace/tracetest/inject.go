// Package tracetest is the tests' error-injection hook: a backend wrapper whose sessions, while
// observed, add a small error to one named intermediate at one position, standing for a wrong
// kernel in one layer; and the check that observing a session leaves its results unchanged.
// Tests only: nothing outside _test files imports it.
package tracetest

import (
	"errors"

	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
)

// Fault is where and how much error to inject: at point P, position Pos, the row's first value
// moves by Rel times the row's largest magnitude.
type Fault struct {
	P   trace.Point
	Pos int
	Rel float32
}

// Inject wraps b so that its observed sessions apply f. The error reaches the rest of the forward
// pass where the backend hands its observer its own buffer (fast on the cpu; Metal's engine writes
// the observed row back to the device).
func Inject(b engine.Backend, f Fault) engine.Backend { return &backend{Backend: b, f: f} }

type backend struct {
	engine.Backend
	f Fault
}

func (b *backend) NewSession() (engine.Session, error) {
	s, err := b.Backend.NewSession()
	if err != nil {
		return nil, err
	}
	obs, ok := s.(trace.Observable)
	if !ok {
		return nil, errors.Join(errors.New("tracetest: the wrapped session does not report intermediates"), s.Close())
	}
	return &session{Session: s, obs: obs, f: b.f}, nil
}

type session struct {
	engine.Session
	obs trace.Observable
	f   Fault
}

// Observe attaches o behind the fault.
func (s *session) Observe(o trace.Observer) {
	if o == nil {
		s.obs.Observe(nil)
		return
	}
	s.obs.Observe(&injector{Observer: o, f: s.f})
}

type injector struct {
	trace.Observer
	f Fault
}

func (in *injector) Rows(p trace.Point, pos, rows int, x []float32) {
	if p == in.f.P && pos <= in.f.Pos && in.f.Pos < pos+rows {
		n := len(x) / rows
		row := x[(in.f.Pos-pos)*n : (in.f.Pos-pos+1)*n]
		var m float32
		for _, v := range row {
			m = max(m, v, -v)
		}
		row[0] += in.f.Rel * m
	}
	in.Observer.Rows(p, pos, rows, x)
}
