package trace

import (
	"fmt"
	"sort"
)

// Choice is one token's router decision in one layer.
type Choice struct {
	Logits  []float32 // [E] router logits
	IDs     []int     // [k] chosen experts, ascending
	Weights []float32 // [k] their weights, in the order of IDs
}

// Recorder is an Observer that keeps a copy of every value it is shown, by point and position.
// A later report of the same point and position replaces the earlier one.
type Recorder struct {
	rows   map[Point]map[int][]float32 // point → position → [n]
	routes map[[2]int]Choice           // (layer, position) → choice
	err    error
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{rows: map[Point]map[int][]float32{}, routes: map[[2]int]Choice{}}
}

// Rows implements Observer.
func (r *Recorder) Rows(p Point, pos, rows int, x []float32) {
	if rows <= 0 || len(x)%rows != 0 {
		r.fail(fmt.Errorf("trace: %v at %d: %d values in %d rows", p, pos, len(x), rows))
		return
	}
	m := r.rows[p]
	if m == nil {
		m = map[int][]float32{}
		r.rows[p] = m
	}
	n := len(x) / rows
	for i := range rows {
		m[pos+i] = append([]float32(nil), x[i*n:(i+1)*n]...)
	}
}

// Route implements Observer; it stores each token's experts sorted ascending with their weights.
func (r *Recorder) Route(l, pos, rows int, logits []float32, ids []int, weights []float32) {
	if rows <= 0 || len(logits)%rows != 0 || len(ids)%rows != 0 || len(ids) != len(weights) {
		r.fail(fmt.Errorf("trace: L%d router at %d: %d logits, %d ids, %d weights in %d rows", l, pos, len(logits), len(ids), len(weights), rows))
		return
	}
	e, k := len(logits)/rows, len(ids)/rows
	for i := range rows {
		c := Choice{Logits: append([]float32(nil), logits[i*e:(i+1)*e]...)}
		order := make([]int, k)
		for j := range order {
			order[j] = i*k + j
		}
		sort.Slice(order, func(a, b int) bool { return ids[order[a]] < ids[order[b]] })
		for _, j := range order {
			c.IDs = append(c.IDs, ids[j])
			c.Weights = append(c.Weights, weights[j])
		}
		r.routes[[2]int{l, pos + i}] = c
	}
}

func (r *Recorder) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Err is the first malformed report the recorder was given, if any.
func (r *Recorder) Err() error { return r.err }

// Points lists the points recorded (Router points for the layers with routes), in forward order.
func (r *Recorder) Points() []Point {
	var ps []Point
	for p := range r.rows {
		ps = append(ps, p)
	}
	seen := map[int]bool{}
	for k := range r.routes {
		if !seen[k[0]] {
			seen[k[0]] = true
			ps = append(ps, At(k[0], Router))
		}
	}
	sort.Slice(ps, func(a, b int) bool { return ps[a].Order() < ps[b].Order() })
	return ps
}

// Positions lists the positions recorded for p, ascending.
func (r *Recorder) Positions(p Point) []int {
	var out []int
	if p.Site == Router {
		for k := range r.routes {
			if k[0] == p.Layer {
				out = append(out, k[1])
			}
		}
	} else {
		for pos := range r.rows[p] {
			out = append(out, pos)
		}
	}
	sort.Ints(out)
	return out
}

// Value is p's row at pos, or nil when none was recorded.
func (r *Recorder) Value(p Point, pos int) []float32 { return r.rows[p][pos] }

// Choice is layer l's router decision at pos.
func (r *Recorder) Choice(l, pos int) (Choice, bool) {
	c, ok := r.routes[[2]int{l, pos}]
	return c, ok
}
