package perfmodel

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/metal"
)

// The honest model: the roofline's bytes and FLOPs per kernel (DecodeCosts, PrefillCosts), priced
// at what each kernel's design reaches (Designs) on a GPU's real rates, at the occupancy its
// dispatches' grids allow, plus what the engine's encoding costs: dependent steps, threadgroup
// launches, submission and CPU encoding, all counted from the engine's real plans
// (metal.PlanCounts), and prefill in the engine's chunks, weights re-read per chunk.

// Term is one part of a step's time.
type Term int

// The terms, in the order the document prints them.
const (
	TermRoofline  Term = iota // max(bytes / bandwidth, FLOPs / matrix rate), kernel by kernel
	TermDesign                // what each design loses against that: efficiency, a slower compute rate
	TermOccupancy             // dispatches of too few threadgroups to draw the whole bandwidth
	TermSteps                 // the GPU draining at each barrier (or each serial dispatch)
	TermGroups                // threadgroup launches
	TermLatency               // deltanet_scan's sequential walk where it outlasts its traffic
	TermSubmit                // commit to GPU start, completion to wake-up
	TermCPU                   // CPU encoding the GPU waits for
	NumTerms
)

var termNames = [NumTerms]string{"roofline (bytes at full bandwidth, FLOPs at the matrix rate)",
	"kernel designs below their roofline", "occupancy (dispatches of few threadgroups)",
	"dependent steps (barriers)", "threadgroup launches", "DeltaNet scan latency",
	"command-buffer submission and wake-up", "CPU encoding not hidden"}

func (t Term) String() string { return termNames[t] }

// Breakdown is a step's time by term, in seconds.
type Breakdown [NumTerms]float64

// Total is the step's time.
func (b Breakdown) Total() float64 {
	var s float64
	for _, v := range b {
		s += v
	}
	return s
}

func (b *Breakdown) add(o Breakdown) {
	for i := range b {
		b[i] += o[i]
	}
}

// Honest prices the engine's plans on a GPU.
type Honest struct {
	GPU     GPU
	Over    Overheads
	Designs map[string]Design
	Cfg     *checkpoint.Config
	Plans   metal.PlanCounts
	Serial  bool // price a serial encoder (one step per dispatch) instead of the concurrent one
	Chunk   int  // prefill chunk; 0 means the plans' own
}

// NewHonest is the model with the default overheads and designs.
func NewHonest(g GPU, cfg *checkpoint.Config, pc metal.PlanCounts) *Honest {
	return &Honest{GPU: g, Over: DefaultOverheads(g), Designs: Designs(), Cfg: cfg, Plans: pc}
}

func (h *Honest) chunk() int {
	if h.Chunk > 0 {
		return h.Chunk
	}
	return h.Plans.Chunk
}

// Decode is one decode token's time at a context of ctx cached positions.
func (h *Honest) Decode(ctx int) (Breakdown, error) {
	cs, err := DecodeCosts(h.Cfg, ctx)
	if err != nil {
		return Breakdown{}, err
	}
	return h.step(cs, 1, h.decodePlan(ctx), 1)
}

// decodePlan is the decode plan's counts at a context of ctx cached positions: the plans are
// counted at position 0, where attn_decode_split has one key range per kv head; at ctx the engine
// splits the cache into decodeRanges ranges, each its own threadgroup.
func (h *Honest) decodePlan(ctx int) metal.PlanCost {
	pc := h.Plans.Decode
	l, ok := pc.Kernels["attn_decode_split"]
	if !ok {
		return pc
	}
	ks := make(map[string]metal.Launches, len(pc.Kernels))
	for k, v := range pc.Kernels {
		ks[k] = v
	}
	l.Groups = l.Dispatches * h.Cfg.NumKVHeads * int(decodeRanges(ctx+1, h.Cfg.NumKVHeads))
	ks["attn_decode_split"] = l
	pc.Kernels = ks
	return pc
}

// Prefill is the time to prefill an n-token prompt in the engine's chunks, the head on the last.
func (h *Honest) Prefill(n int) (Breakdown, error) {
	if n < 1 {
		return Breakdown{}, errors.New("perfmodel: prefill of no tokens")
	}
	C := h.chunk()
	if C < 1 || h.Plans.Chunk < 1 {
		return Breakdown{}, errors.New("perfmodel: no prefill chunk in the plan counts")
	}
	var b Breakdown
	for c0 := 0; c0 < n; c0 += C {
		T, last := min(C, n-c0), c0+C >= n
		cs, err := costs(h.Cfg, T, c0, false, last)
		if err != nil {
			return Breakdown{}, err
		}
		pc := h.Plans.Prefill
		if last {
			pc = h.Plans.PrefillLast
		}
		// The plans were counted at the engine's chunk; the grids grow with the chunk's rows.
		s, err := h.step(cs, T, pc, float64(T)/float64(h.Plans.Chunk))
		if err != nil {
			return Breakdown{}, err
		}
		b.add(s)
	}
	return b, nil
}

// step prices one command list of T tokens: cs per token, pc its plan's counts, groups scaling
// pc's threadgroups to this step's rows.
func (h *Honest) step(cs []Cost, T int, pc metal.PlanCost, groups float64) (Breakdown, error) {
	b, _, err := h.price(cs, T, pc, groups)
	return b, err
}

// KernelTime is one kernel's part of a step: its dispatches, threadgroups per dispatch, the
// fraction of the bandwidth its grid can draw, and its modelled time (design, occupancy, launch
// floor and, for deltanet_scan, the sequential walk's latency). Barriers, submission and CPU
// encoding are the step's, not a kernel's.
type KernelTime struct {
	Kernel     string
	Dispatches int
	Groups     float64 // per dispatch
	Occupancy  float64
	Seconds    float64
}

// DecodeKernels is Decode's time kernel by kernel, slowest first.
func (h *Honest) DecodeKernels(ctx int) ([]KernelTime, error) {
	cs, err := DecodeCosts(h.Cfg, ctx)
	if err != nil {
		return nil, err
	}
	_, ks, err := h.price(cs, 1, h.decodePlan(ctx), 1)
	return ks, err
}

// ChunkKernels is the engine's first full prefill chunk (no head) kernel by kernel, slowest first.
func (h *Honest) ChunkKernels() ([]KernelTime, error) {
	cs, err := costs(h.Cfg, h.Plans.Chunk, 0, false, false)
	if err != nil {
		return nil, err
	}
	_, ks, err := h.price(cs, h.Plans.Chunk, h.Plans.Prefill, 1)
	return ks, err
}

// price is step, with each kernel's time.
func (h *Honest) price(cs []Cost, T int, pc metal.PlanCost, groups float64) (Breakdown, []KernelTime, error) {
	if err := h.check(cs, pc); err != nil {
		return Breakdown{}, nil, err
	}
	g, o := h.GPU, h.Over
	var b Breakdown
	work := map[string]float64{} // each kernel's priced time
	occs := map[string]float64{}
	for _, c := range cs {
		d := h.Designs[c.Kernel]
		l := pc.Kernels[c.Kernel]
		occ := min(1, o.TGShare*groups*float64(l.Groups)/float64(l.Dispatches)/float64(g.Cores))
		ideal := max(c.Bytes()/g.Bandwidth, c.FLOPs/g.Rates[Matrix])
		full := max(c.Bytes()/(g.Bandwidth*d.Mem), c.FLOPs/(g.Rates[d.Rate]*d.Cmp))
		t := float64(T)
		b[TermRoofline] += t * ideal
		b[TermDesign] += t * (full - ideal)
		b[TermOccupancy] += t * (full/occ - full)
		work[c.Kernel] += t * full / occ
		occs[c.Kernel] = occ
	}
	// Launching threadgroups is a throughput limit of its own: a kernel takes at least its
	// threadgroups × Group, which only shows where most of them have no work (empty grids).
	var ks []KernelTime
	for k, l := range pc.Kernels {
		launch := max(0, o.Group*float64(l.Groups)*groups-work[k])
		b[TermGroups] += launch
		ks = append(ks, KernelTime{Kernel: k, Dispatches: l.Dispatches, Groups: groups * float64(l.Groups) / float64(l.Dispatches),
			Occupancy: occs[k], Seconds: work[k] + launch})
	}
	if l := pc.Kernels["deltanet_scan"]; l.Dispatches > 0 {
		b[TermLatency] = max(0, o.ScanStep*float64(T*l.Dispatches)-work["deltanet_scan"])
		for i := range ks {
			if ks[i].Kernel == "deltanet_scan" {
				ks[i].Seconds += b[TermLatency]
			}
		}
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].Seconds != ks[j].Seconds {
			return ks[i].Seconds > ks[j].Seconds
		}
		return ks[i].Kernel < ks[j].Kernel
	})
	steps := pc.Barriers + pc.Passes
	if h.Serial {
		steps = pc.Dispatches + pc.Copies
	}
	b[TermSteps] = o.Step * float64(steps)
	b[TermSubmit] = o.Submit
	gpu := b.Total() - b[TermSubmit]
	cpu := o.Call * float64(pc.Calls)
	// The GPU starts once the first command buffer is encoded; after that the CPU is hidden
	// unless it is the slower of the two.
	first := cpu * float64(min(pc.Dispatches, 16)) / float64(max(pc.Dispatches, 1))
	b[TermCPU] = first + max(0, cpu-first-gpu)
	return b, ks, nil
}

// check requires the cost table and the plan to name the same kernels, and a design for each:
// a kernel added to the plans, or dropped, must be priced before the model says anything.
func (h *Honest) check(cs []Cost, pc metal.PlanCost) error {
	priced := map[string]bool{}
	for _, c := range cs {
		priced[c.Kernel] = true
		if _, ok := h.Designs[c.Kernel]; !ok {
			return fmt.Errorf("perfmodel: kernel %s has no design figures (Designs)", c.Kernel)
		}
		if l := pc.Kernels[c.Kernel]; l.Dispatches == 0 {
			return fmt.Errorf("perfmodel: the cost table prices %s, which the engine's plan does not dispatch", c.Kernel)
		}
	}
	var missing []string
	for k := range pc.Kernels {
		if !priced[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("perfmodel: the engine's plan dispatches %v, which the cost table does not price", missing)
	}
	return nil
}

// Rates are decode tok/s at each length (context) and prefill tok/s of a prompt of that length,
// and their means over the lengths.
type Rates struct {
	Lengths                 []int
	Decode, Prefill         []float64
	DecodeMean, PrefillMean float64
}

// AtLengths prices the published lengths; without, when not negative, leaves that term out.
func (h *Honest) AtLengths(without Term) (Rates, error) {
	r := Rates{Lengths: Lengths()}
	for _, n := range r.Lengths {
		d, err := h.Decode(n)
		if err != nil {
			return Rates{}, err
		}
		p, err := h.Prefill(n)
		if err != nil {
			return Rates{}, err
		}
		if without >= 0 {
			d[without], p[without] = 0, 0
		}
		r.Decode = append(r.Decode, 1/d.Total())
		r.Prefill = append(r.Prefill, float64(n)/p.Total())
		r.DecodeMean += 1 / d.Total() / float64(len(r.Lengths))
		r.PrefillMean += float64(n) / p.Total() / float64(len(r.Lengths))
	}
	return r, nil
}

// touchedExperts is how many of E experts hold at least one of T tokens' k slots under uniform
// routing: E·(1 − (1 − k/E)^T). Each is read once per chunk.
func touchedExperts(E, k, T float64) float64 { return E * (1 - math.Pow(1-k/E, T)) }
