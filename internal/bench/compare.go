package bench

// Ratio is one backend's speed relative to a baseline backend's at one prompt length: its tokens
// per second of each phase divided by the baseline's.
type Ratio struct {
	Backend      string  `json:"backend"`
	Baseline     string  `json:"baseline"`
	PromptTokens int     `json:"prompt_tokens"`
	Prefill      float64 `json:"prefill"`
	Decode       float64 `json:"decode"`
}

// Ratios compares every report after the first with the first (the baseline), prompt length by
// prompt length, in the order the later report measured them. Results of equal length pair in
// the order measured; a length the baseline lacks (its context was shorter) is left out. Fewer
// than two reports give no ratios.
func Ratios(reps []Report) []Ratio {
	out := []Ratio{}
	if len(reps) < 2 {
		return out
	}
	base := reps[0]
	for _, r := range reps[1:] {
		next := 0 // the first baseline result not yet paired
		for _, x := range r.Results {
			k := next
			for k < len(base.Results) && base.Results[k].PromptTokens != x.PromptTokens {
				k++
			}
			if k == len(base.Results) {
				continue
			}
			b := base.Results[k]
			next = k + 1
			out = append(out, Ratio{Backend: r.Backend, Baseline: base.Backend, PromptTokens: x.PromptTokens,
				Prefill: x.PrefillTokS / b.PrefillTokS, Decode: x.DecodeTokS / b.DecodeTokS})
		}
	}
	return out
}
