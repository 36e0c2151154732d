package engine

import (
	"math/rand/v2"
	"testing"
)

// realVocab is the padded vocabulary of Qwen3.6 (model.md §5): the per-step cost of sampling and
// logprobs scales with it.
const realVocab = 248320

func randomLogits(n int) []float32 {
	r := rand.New(rand.NewPCG(1, 2))
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(r.NormFloat64() * 3)
	}
	return l
}

func BenchmarkPickGreedy(b *testing.B) {
	l := randomLogits(realVocab)
	sm := newSampler(Sampling{})
	for b.Loop() {
		sm.pickFull(l)
	}
}

func BenchmarkPickTopK20(b *testing.B) {
	l := randomLogits(realVocab)
	sm := newSampler(Sampling{Temperature: 1, TopK: 20, TopP: 0.95, HasSeed: true})
	for b.Loop() {
		sm.pickFull(l)
	}
}

func BenchmarkLogprobsTop5(b *testing.B) {
	l := randomLogits(realVocab)
	for b.Loop() {
		logprobs(l, 7, 5)
	}
}

func BenchmarkLogSumExp(b *testing.B) {
	l := randomLogits(realVocab)
	for b.Loop() {
		LogSumExp(l)
	}
}

// BenchmarkPickTopK20Step is BenchmarkPickTopK20 from the step result the loop asks for (the top 20
// logits), what a backend with a GPU top-k hands the sampler instead of [V] logits.
func BenchmarkPickTopK20Step(b *testing.B) {
	s := Sampling{Temperature: 1, TopK: 20, TopP: 0.95, HasSeed: true}
	r := NewStepResult(randomLogits(realVocab), s.stepOptions(false, 0))
	r.Logits = nil
	sm := newSampler(s)
	for b.Loop() {
		sm.pick(&r)
	}
}

// BenchmarkStepResultGreedy is what a CPU backend adds to a greedy step: the argmax.
func BenchmarkStepResultGreedy(b *testing.B) {
	l := randomLogits(realVocab)
	for b.Loop() {
		NewStepResult(l, StepOptions{})
	}
}
