package checkpoint

import (
	"fmt"
	"sort"

	"github.com/lily-engine/lily/internal/safetensors"
	"github.com/lily-engine/lily/internal/tensortable"
)

// tensor categories for the byte accounting of Stats.
type category int

const (
	catOther category = iota
	catEmbed
	catRouted
)

// loader builds Weights from a name -> tensor map, recording which tensors it used.
type loader struct {
	cfg    *Config
	d      Dims // cfg's sizes, which the tensor table's shapes are computed from
	ts     map[string]Tensor
	prefix string
	layout Layout
	used   map[string]category
}

// build checks every tensor against cfg and assembles the typed weights. Tensors whose Data is
// nil are accepted for matrices (shapes and dtypes are checked, nothing is read), which lets
// Stats be computed from a header-only description; vectors need their data.
func build(cfg *Config, ts map[string]Tensor) (*Weights, *loader, error) {
	l := &loader{cfg: cfg, d: cfg.Dims(), ts: ts, used: map[string]category{}}
	if err := l.detectPrefix(); err != nil {
		return nil, nil, err
	}
	if err := l.detectLayout(); err != nil {
		return nil, nil, err
	}
	w := &Weights{Config: cfg, Layout: l.layout}
	var err error
	if w.Embed, err = l.module(tensortable.Embed(l.d, l.prefix), catEmbed); err != nil {
		return nil, nil, err
	}
	if err := l.lmHead(w); err != nil {
		return nil, nil, err
	}
	if w.FinalNorm, err = l.vector(tensortable.FinalNorm(l.d, l.prefix)); err != nil {
		return nil, nil, err
	}
	w.Layers = make([]Layer, cfg.NumLayers)
	for i := range w.Layers {
		if err := l.layer(&w.Layers[i], i); err != nil {
			return nil, nil, err
		}
	}
	if err := l.checkLeftovers(); err != nil {
		return nil, nil, err
	}
	return w, l, nil
}

// detectPrefix finds the one text prefix under which embed_tokens.weight exists.
func (l *loader) detectPrefix() error {
	prefixes := tensortable.TextPrefixes()
	embed := func(p string) string { return tensortable.Embed(l.d, p).Name + tensortable.WeightSuffix }
	var found []string
	for _, p := range prefixes {
		if _, ok := l.ts[embed(p)]; ok {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return fmt.Errorf("tensor %q missing: no embed_tokens.weight under any known prefix %q",
			embed(prefixes[0]), prefixes)
	case 1:
		l.prefix = found[0]
		return nil
	}
	return fmt.Errorf("ambiguous checkpoint: embed_tokens.weight under prefixes %q", found)
}

// detectLayout reads the first DeltaNet layer's conv1d shape: [C,1,K] is raw HF, [C,K,1] is MLX
// (model.md §2.5). Without DeltaNet layers (or with K == 1) the MLX prefix decides.
func (l *loader) detectLayout() error {
	l.layout = LayoutHF
	if l.prefix == tensortable.Prefix(LayoutMLX) {
		l.layout = LayoutMLX
	}
	for i, k := range l.cfg.LayerTypes {
		if k != LinearAttention {
			continue
		}
		name := tensortable.Layer(l.d, LayoutHF, l.prefix, i).DeltaNet.Conv.Name
		t, ok := l.ts[name]
		if !ok {
			return fmt.Errorf("tensor %q missing (layer %d is linear_attention)", name, i)
		}
		if len(t.Shape) != 3 {
			return fmt.Errorf("tensor %q in %s: shape %v, want [C,1,K] (HF) or [C,K,1] (MLX)", name, t.File, t.Shape)
		}
		switch {
		case t.Shape[1] == 1 && t.Shape[2] == 1:
			// K == 1 cannot tell; keep the prefix's answer.
		case t.Shape[1] == 1:
			l.layout = LayoutHF
		case t.Shape[2] == 1:
			l.layout = LayoutMLX
		default:
			return fmt.Errorf("tensor %q in %s: shape %v, want [C,1,K] (HF) or [C,K,1] (MLX)", name, t.File, t.Shape)
		}
		return nil
	}
	return nil
}

// lmHead loads lm_head, or ties it to the embedding when the config says so and none is stored.
func (l *loader) lmHead(w *Weights) error {
	heads := []tensortable.Tensor{tensortable.LMHead(l.d, LayoutHF), tensortable.LMHead(l.d, LayoutMLX)}
	logical := heads[0].Name // "lm_head", whichever layout stores it
	var found []tensortable.Tensor
	for _, h := range heads {
		if _, ok := l.ts[h.Name+tensortable.WeightSuffix]; ok {
			found = append(found, h)
		}
	}
	switch {
	case len(found) > 1:
		return fmt.Errorf("ambiguous checkpoint: lm_head stored as both %q and %q",
			found[0].Name+tensortable.WeightSuffix, found[1].Name+tensortable.WeightSuffix)
	case len(found) == 0 && l.cfg.TieWordEmbeddings:
		w.LMHead = w.Embed
		w.LMHead.Name = logical
		return nil
	case len(found) == 0:
		return fmt.Errorf("tensor %q missing (or %q; tie_word_embeddings is false)",
			heads[0].Name+tensortable.WeightSuffix, heads[1].Name+tensortable.WeightSuffix)
	}
	var err error
	w.LMHead, err = l.named(logical, found[0], catOther)
	return err
}

// get marks a tensor used and returns it; a missing tensor is an error naming it and why.
func (l *loader) get(name, why string, cat category) (Tensor, error) {
	t, ok := l.ts[name]
	if !ok {
		return Tensor{}, fmt.Errorf("tensor %q missing (%s)", name, why)
	}
	l.used[name] = cat
	return t, nil
}

// checkLeftovers rejects text-model tensors that no part of the model uses.
func (l *loader) checkLeftovers() error {
	var extra []string
	for name := range l.ts {
		if _, ok := l.used[name]; !ok && !tensortable.IsOutsideText(name) {
			extra = append(extra, name)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	t := l.ts[extra[0]]
	msg := fmt.Sprintf("unexpected tensor %q in %s", t.Name, t.File)
	if li, ok := tensortable.LayerIndex(l.prefix, t.Name); ok {
		if li >= l.cfg.NumLayers {
			msg += fmt.Sprintf(" (config.json has %d layers)", l.cfg.NumLayers)
		} else {
			msg += fmt.Sprintf(" (layer %d is %s)", li, l.cfg.LayerTypes[li])
		}
	}
	if len(extra) > 1 {
		msg += fmt.Sprintf(" and %d more", len(extra)-1)
	}
	return fmt.Errorf("%s", msg)
}

// shapeIs reports whether a tensor has exactly the given shape.
func shapeIs(t Tensor, want ...int) bool {
	if len(t.Shape) != len(want) {
		return false
	}
	for i := range want {
		if t.Shape[i] != want[i] {
			return false
		}
	}
	return true
}

// numel is the element count of a shape.
func numel(shape []int) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	return n
}

// nbytes is a tensor's stored size, from its header (Data may be nil in header-only builds).
func nbytes(t Tensor) int64 { return numel(t.Shape) * int64(t.DType.Size()) }

// isFloat reports whether a dtype is one lily reads as dense floats.
func isFloat(d DType) bool {
	return d == safetensors.BF16 || d == safetensors.F16 || d == safetensors.F32
}
