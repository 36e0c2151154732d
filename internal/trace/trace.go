// Package trace names the intermediates of the forward pass that every backend (ref, fast, metal)
// can report to an Observer, so that two backends can be compared point by point (lily diff).
// The names are defined here once: "embed", "L17.input_norm", "L17.deltanet.out", …, "logits".
package trace

import (
	"fmt"
	"strconv"
	"strings"
)

// Site is one kind of intermediate: model-level (Embed, FinalNorm, Logits) or per layer.
type Site uint8

// The sites, in the order the forward pass produces them within a layer or the model.
const (
	Embed        Site = iota // the token's embedding row: [H]
	InputNorm                // RMSNorm(h, input_layernorm): [H]
	DeltaNetOut              // the Gated DeltaNet mixer's output (after out_proj): [H]
	AttentionOut             // the gated attention mixer's output (after o_proj): [H]
	MixerResid               // the residual after the mixer, h + mixer: [H]
	PostNorm                 // RMSNorm(h, post_attention_layernorm): [H]
	Router                   // the router's chosen experts and weights (Observer.Route)
	MoEOut                   // the MoE block's output (routed + gated shared expert): [H]
	MoEResid                 // the residual after the MoE block: the layer's output: [H]
	FinalNorm                // RMSNorm(h, norm): what lm_head reads: [H]
	Logits                   // lm_head's output: [V]
	numSites
)

var siteNames = [numSites]string{
	Embed: "embed", InputNorm: "input_norm", DeltaNetOut: "deltanet.out", AttentionOut: "attention.out",
	MixerResid: "mixer.resid", PostNorm: "post_norm", Router: "router", MoEOut: "moe.out",
	MoEResid: "moe.resid", FinalNorm: "final_norm", Logits: "logits",
}

func (s Site) String() string {
	if s < numSites {
		return siteNames[s]
	}
	return "site(" + strconv.Itoa(int(s)) + ")"
}

// PerLayer reports whether the site belongs to a layer (its Point has a layer number).
func (s Site) PerLayer() bool { return s > Embed && s < FinalNorm }

// Point is one named intermediate: a site, and the layer for the per-layer sites (−1 otherwise).
type Point struct {
	Layer int
	Site  Site
}

// At is the point of a per-layer site in layer l.
func At(l int, s Site) Point { return Point{Layer: l, Site: s} }

// Model is the point of a model-level site.
func Model(s Site) Point { return Point{Layer: -1, Site: s} }

// String is the point's one name: "embed", "L3.deltanet.out", "final_norm", "logits".
func (p Point) String() string {
	if p.Site.PerLayer() {
		return "L" + strconv.Itoa(p.Layer) + "." + p.Site.String()
	}
	return p.Site.String()
}

// Parse reads a point's name as String writes it.
func Parse(name string) (Point, error) {
	if l, rest, ok := strings.Cut(name, "."); ok && strings.HasPrefix(l, "L") {
		n, err := strconv.Atoi(l[1:])
		if err != nil || n < 0 || l[1:] != strconv.Itoa(n) {
			return Point{}, fmt.Errorf("trace: point %q: bad layer %q", name, l)
		}
		for s := InputNorm; s < FinalNorm; s++ {
			if siteNames[s] == rest {
				return At(n, s), nil
			}
		}
		return Point{}, fmt.Errorf("trace: point %q: no per-layer site %q", name, rest)
	}
	for _, s := range []Site{Embed, FinalNorm, Logits} {
		if siteNames[s] == name {
			return Model(s), nil
		}
	}
	return Point{}, fmt.Errorf("trace: unknown point %q", name)
}

// Order is the point's place in the forward pass of one step: the embedding, then each layer's
// sites in order, then the final norm and the logits.
func (p Point) Order() int {
	switch {
	case p.Site == Embed:
		return -1
	case p.Site.PerLayer():
		return p.Layer*int(numSites) + int(p.Site)
	default:
		return 1<<30 + int(p.Site)
	}
}

// Observer receives a session's intermediates as the forward pass produces them. x is the engine's
// own buffer (rows × n values, row-major, rows for positions pos, pos+1, …) and is valid only
// during the call; an observer copies what it keeps and does not write to it (only the tests'
// error-injection hook does, to stand for a wrong kernel).
type Observer interface {
	// Rows reports point p for the tokens at positions pos..pos+rows−1: x: [rows, n].
	Rows(p Point, pos, rows int, x []float32)
	// Route reports layer l's router for the tokens at positions pos..pos+rows−1: logits
	// [rows, E], and the chosen experts and their weights [rows, k] in the engine's order.
	Route(l, pos, rows int, logits []float32, ids []int, weights []float32)
}

// Observable is implemented by every backend's sessions: Observe attaches o (nil detaches it).
// With none attached a session does no observation work beyond one nil check per layer.
type Observable interface {
	Observe(o Observer)
}
