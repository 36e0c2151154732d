package engine_test

import (
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/lily-engine/lily/internal/engine"
)

// TestCheckWholeIntRange: Check accepts a request exactly when prompt + max_tokens fits the context,
// for every MaxTokens an int can hold (a sum near MaxInt must not wrap into "fits").
func TestCheckWholeIntRange(t *testing.T) {
	e := engine.New(newBackend()) // context 256
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 300).Draw(rt, "prompt")
		maxTok := rapid.OneOf(rapid.Int(), rapid.IntRange(math.MaxInt-300, math.MaxInt), rapid.IntRange(-5, 300)).Draw(rt, "max")
		err := e.Check(&engine.Request{Prompt: make([]int32, n), MaxTokens: maxTok})
		fits := maxTok >= 0 && n <= 256 && maxTok <= 256-n
		var cl *engine.ContextLengthError
		if fits != (err == nil) || (!fits && !errors.As(err, &cl)) {
			rt.Fatalf("prompt %d max %d: fits %v, err %v", n, maxTok, fits, err)
		}
	})
	var cl *engine.ContextLengthError
	if err := e.Check(&engine.Request{Prompt: make([]int32, 10), MaxTokens: math.MaxInt}); !errors.As(err, &cl) {
		t.Fatalf("MaxInt max_tokens: %v", err)
	}
}
