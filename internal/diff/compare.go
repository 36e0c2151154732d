package diff

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/lily-engine/lily/internal/trace"
)

// Row is one point at one position: the largest absolute difference, the relative error
// (RelErr), and the point's budget for it.
type Row struct {
	Point    string  `json:"point"`
	Position int     `json:"position"`
	Step     int     `json:"step"` // 0: the prefill; i ≥ 1: decode step i
	MaxAbs   float64 `json:"max_abs"`
	MaxRel   float64 `json:"max_rel"`
	Budget   float64 `json:"budget"`
	Within   bool    `json:"within"`
	Note     string  `json:"note,omitempty"` // a router row: the flipped experts and their margin
	order    int
}

// Flip is a router decision that differs between the backends: the experts only one of them chose,
// with the reference's margin between its k-th and (k+1)-th router logits and the router logits'
// largest difference at that token. A flip is a near tie when the difference could have swapped
// the two (2·max|Δ logit| ≥ margin); otherwise it is out of budget.
type Flip struct {
	Layer    int     `json:"layer"`
	Position int     `json:"position"`
	OnlyRef  []int   `json:"only_ref"`
	OnlyGot  []int   `json:"only_got"`
	Margin   float64 `json:"margin"`
	MaxDelta float64 `json:"max_delta_logit"`
	NearTie  bool    `json:"near_tie"`
}

// Report is the comparison of two traces.
type Report struct {
	Backend string   `json:"backend"`
	Against string   `json:"against"`
	Prompt  []int32  `json:"prompt_ids"`
	Decoded []int32  `json:"decoded_ids"` // the reference's greedy tokens, fed to both
	Rows    []Row    `json:"rows"`        // every point at every position, in the order computed
	Flips   []Flip   `json:"flips"`
	Missing []string `json:"missing,omitempty"` // points one backend reported and the other did not
	First   *Row     `json:"first_divergence"`  // the first row out of budget (nil: none)
	Pass    bool     `json:"pass"`
}

// ScaledErr is max|got − want| and that over max|want|: the error relative to the result's scale,
// the measure of the conformance tests and of every non-logit point. A NaN difference counts as
// +Inf; where want is all zeros, rel is maxAbs.
func ScaledErr(got, want []float32) (maxAbs, rel float64) {
	var scale float64
	for i := range want {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		maxAbs = max(maxAbs, d)
		scale = max(scale, math.Abs(float64(want[i])))
	}
	if scale == 0 {
		return maxAbs, maxAbs
	}
	return maxAbs, maxAbs / scale
}

// RelErr is point p's error: ScaledErr, and for the logits max|got − want| over their spread
// (max − min of want), as the whole-backend logit budget is stated.
func RelErr(p trace.Point, got, want []float32) (maxAbs, rel float64) {
	maxAbs, rel = ScaledErr(got, want)
	if p.Site != trace.Logits {
		return maxAbs, rel
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, w := range want {
		lo, hi = min(lo, float64(w)), max(hi, float64(w))
	}
	if hi <= lo {
		return maxAbs, maxAbs
	}
	return maxAbs, maxAbs / (hi - lo)
}

// Compare compares got with want at every point and position both reported; prompt is the number
// of prefill tokens (later positions are decode steps).
func Compare(got, want *Trace, prompt int) *Report {
	r := &Report{Backend: got.Backend, Against: want.Backend, Pass: true}
	layers := 0
	for _, p := range want.Rec.Points() {
		if p.Site.PerLayer() {
			layers = max(layers, p.Layer+1)
		}
	}
	attn := make([]bool, layers) // the reference's attention layers, for the budgets
	for _, p := range want.Rec.Points() {
		if p.Site == trace.AttentionOut {
			attn[p.Layer] = true
		}
	}
	step := func(pos int) int { return max(0, pos-prompt+1) }
	gotPts := map[trace.Point]bool{}
	for _, p := range got.Rec.Points() {
		gotPts[p] = true
	}
	for _, p := range want.Rec.Points() {
		if !gotPts[p] {
			r.Missing = append(r.Missing, p.String())
			continue
		}
		delete(gotPts, p)
		for _, pos := range want.Rec.Positions(p) {
			row, ok := comparePoint(r, p, pos, attn, got.Rec, want.Rec)
			if !ok {
				continue
			}
			row.Step, row.order = step(pos), p.Order()
			r.Rows = append(r.Rows, row)
		}
	}
	for p := range gotPts {
		r.Missing = append(r.Missing, p.String())
	}
	sort.Strings(r.Missing)
	sort.SliceStable(r.Rows, func(a, b int) bool {
		x, y := r.Rows[a], r.Rows[b]
		if x.Step != y.Step {
			return x.Step < y.Step
		}
		if x.order != y.order {
			return x.order < y.order
		}
		return x.Position < y.Position
	})
	for i := range r.Rows {
		if !r.Rows[i].Within {
			r.First = &r.Rows[i]
			break
		}
	}
	r.Pass = r.First == nil && len(r.Missing) == 0
	return r
}

// comparePoint compares p at pos; ok is false when got has no value there.
func comparePoint(r *Report, p trace.Point, pos int, attn []bool, got, want *trace.Recorder) (Row, bool) {
	row := Row{Point: p.String(), Position: pos, Budget: Budget(p, attn)}
	if p.Site != trace.Router {
		g, w := got.Value(p, pos), want.Value(p, pos)
		if g == nil {
			return row, false
		}
		if len(g) != len(w) {
			row.MaxAbs, row.MaxRel = math.Inf(1), math.Inf(1)
			row.Note = fmt.Sprintf("%d values, want %d", len(g), len(w))
			return row, true
		}
		row.MaxAbs, row.MaxRel = RelErr(p, g, w)
		row.Within = row.MaxRel <= row.Budget
		return row, true
	}
	g, okg := got.Choice(p.Layer, pos)
	w, _ := want.Choice(p.Layer, pos)
	if !okg {
		return row, false
	}
	if len(g.Logits) != len(w.Logits) || len(g.IDs) != len(w.IDs) {
		row.MaxAbs, row.MaxRel = math.Inf(1), math.Inf(1)
		row.Note = fmt.Sprintf("%d experts of %d, want %d of %d", len(g.IDs), len(g.Logits), len(w.IDs), len(w.Logits))
		return row, true
	}
	// The router's logits, as any point; then its decision, as sets of experts and their weights.
	row.MaxAbs, row.MaxRel = RelErr(p, g.Logits, w.Logits)
	row.Within = row.MaxRel <= row.Budget
	onlyW, onlyG := setDiff(w.IDs, g.IDs), setDiff(g.IDs, w.IDs)
	if len(onlyW) == 0 {
		for i := range g.Weights {
			d := math.Abs(float64(g.Weights[i]) - float64(w.Weights[i]))
			if d > RouteWeightBudget(p.Layer, attn) {
				row.Within = false
				row.Note = fmt.Sprintf("expert %d weight %.6g, want %.6g", w.IDs[i], g.Weights[i], w.Weights[i])
			}
		}
		return row, true
	}
	f := Flip{Layer: p.Layer, Position: pos, OnlyRef: onlyW, OnlyGot: onlyG, Margin: margin(w.Logits, len(w.IDs)), MaxDelta: row.MaxAbs}
	f.NearTie = 2*f.MaxDelta >= f.Margin
	r.Flips = append(r.Flips, f)
	row.Within = false
	kind := "flip"
	if f.NearTie {
		kind = "near-tie flip"
	}
	row.Note = fmt.Sprintf("%s: experts %v chosen instead of %v; margin %.3g, max |Δ logit| %.3g", kind, onlyG, onlyW, f.Margin, f.MaxDelta)
	return row, true
}

// setDiff is the ids of a not in b (both ascending).
func setDiff(a, b []int) []int {
	in := map[int]bool{}
	for _, x := range b {
		in[x] = true
	}
	out := []int{}
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}

// margin is the gap between the k-th and (k+1)-th largest of logits.
func margin(logits []float32, k int) float64 {
	if k >= len(logits) {
		return math.Inf(1)
	}
	s := append([]float32(nil), logits...)
	sort.Slice(s, func(a, b int) bool { return s[a] > s[b] })
	return float64(s[k-1]) - float64(s[k])
}

// Worst is, for each point, its row with the largest MaxRel/Budget (the first out-of-budget row
// of that point when there is one), in forward order: the table lily diff prints.
func (r *Report) Worst() []Row {
	best := map[string]int{}
	var order []string
	for i, row := range r.Rows {
		j, seen := best[row.Point]
		switch {
		case !seen:
			best[row.Point] = i
			order = append(order, row.Point)
		case !r.Rows[j].Within:
		case !row.Within || ratio(row) > ratio(r.Rows[j]):
			best[row.Point] = i
		}
	}
	out := make([]Row, 0, len(order))
	for _, p := range order {
		out = append(out, r.Rows[best[p]])
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].order < out[b].order })
	return out
}

func ratio(r Row) float64 {
	if r.Budget == 0 {
		return math.Inf(1)
	}
	return r.MaxRel / r.Budget
}

// StepName is "prefill" for step 0 and "decode N" otherwise.
func StepName(step int) string {
	if step == 0 {
		return "prefill"
	}
	return "decode " + strconv.Itoa(step)
}
