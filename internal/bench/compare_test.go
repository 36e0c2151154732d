package bench

import (
	"reflect"
	"testing"
)

func TestRatiosAgainstFirst(t *testing.T) {
	ref := Report{Backend: "ref", Results: []Result{
		{PromptTokens: 16, PrefillTokS: 10, DecodeTokS: 2},
		{PromptTokens: 32, PrefillTokS: 8, DecodeTokS: 1},
	}}
	fast := Report{Backend: "fast", Results: []Result{
		{PromptTokens: 16, PrefillTokS: 40, DecodeTokS: 6},
		{PromptTokens: 32, PrefillTokS: 40, DecodeTokS: 4},
	}}
	// A backend whose context held only the shorter prompt, and one with a length ref never ran.
	short := Report{Backend: "short", Results: []Result{{PromptTokens: 16, PrefillTokS: 5, DecodeTokS: 1}}}
	other := Report{Backend: "other", Results: []Result{{PromptTokens: 64, PrefillTokS: 1, DecodeTokS: 1},
		{PromptTokens: 32, PrefillTokS: 2, DecodeTokS: 0.5}}}
	got := Ratios([]Report{ref, fast, short, other})
	want := []Ratio{
		{Backend: "fast", Baseline: "ref", PromptTokens: 16, Prefill: 4, Decode: 3},
		{Backend: "fast", Baseline: "ref", PromptTokens: 32, Prefill: 5, Decode: 4},
		{Backend: "short", Baseline: "ref", PromptTokens: 16, Prefill: 0.5, Decode: 0.5},
		{Backend: "other", Baseline: "ref", PromptTokens: 32, Prefill: 0.25, Decode: 0.5},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ratios\n got %+v\nwant %+v", got, want)
	}
}

func TestRatiosPairRepeatedLengthsInOrder(t *testing.T) {
	a := Report{Backend: "a", Results: []Result{{PromptTokens: 8, PrefillTokS: 1, DecodeTokS: 1},
		{PromptTokens: 8, PrefillTokS: 2, DecodeTokS: 4}}}
	b := Report{Backend: "b", Results: []Result{{PromptTokens: 8, PrefillTokS: 3, DecodeTokS: 3},
		{PromptTokens: 8, PrefillTokS: 3, DecodeTokS: 3}}}
	got := Ratios([]Report{a, b})
	if len(got) != 2 || got[0].Prefill != 3 || got[0].Decode != 3 || got[1].Prefill != 1.5 || got[1].Decode != 0.75 {
		t.Fatalf("ratios %+v, want 3,3 then 1.5,0.75", got)
	}
}

func TestRatiosNeedTwoReports(t *testing.T) {
	for _, reps := range [][]Report{nil, {{Backend: "ref", Results: []Result{{PromptTokens: 8, PrefillTokS: 1, DecodeTokS: 1}}}}} {
		if got := Ratios(reps); got == nil || len(got) != 0 {
			t.Errorf("%d reports: ratios %#v, want an empty list (it encodes as [])", len(reps), got)
		}
	}
}
