package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestRunJSONNonFinite: --json output survives NaN and infinite log-probabilities.
func TestRunJSONNonFinite(t *testing.T) {
	res := &runResult{PromptIDs: []int32{1}, TokenIDs: []int32{2, 3}, Logprobs: []float64{math.NaN(), -0.5},
		TopLogprobs: [][]tokenLogprob{{{ID: 2, Logprob: math.Inf(-1)}}, {{ID: 3, Logprob: -0.5}}}}
	if _, err := json.Marshal(res); err == nil {
		t.Fatal("the test's premise: NaN does not encode")
	}
	if !finiteLogprobs(res) {
		t.Fatal("no non-finite value reported")
	}
	b, err := json.Marshal(res)
	if err != nil || strings.Count(string(b), "-9999") != 2 || !strings.Contains(string(b), "-0.5") {
		t.Fatalf("%s %v", b, err)
	}
	if finiteLogprobs(res) {
		t.Fatal("finite values reported as non-finite")
	}
}
