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
		err := e.Check(&engine.Request{Prompt: make([]int32, n), MaxTokens: maxTok}, 0)
		fits := maxTok >= 0 && n <= 256 && maxTok <= 256-n
		var cl *engine.ContextLengthError
		if fits != (err == nil) || (!fits && !errors.As(err, &cl)) {
			rt.Fatalf("prompt %d max %d: fits %v, err %v", n, maxTok, fits, err)
		}
	})
	var cl *engine.ContextLengthError
	if err := e.Check(&engine.Request{Prompt: make([]int32, 10), MaxTokens: math.MaxInt}, 0); !errors.As(err, &cl) {
		t.Fatalf("MaxInt max_tokens: %v", err)
	}
}

// TestCheckLeastAndWindow: a MaxTokens below least is refused and reported as least; NewWindow
// narrows the window below the backend's MaxContext but never widens it.
func TestCheckLeastAndWindow(t *testing.T) {
	e := engine.New(newBackend()) // context 256
	var cl *engine.ContextLengthError
	if err := e.Check(&engine.Request{Prompt: make([]int32, 10), MaxTokens: 0}, 1); !errors.As(err, &cl) || cl.MaxTokens != 1 {
		t.Fatalf("max 0 with least 1: %v", err)
	}
	if err := e.Check(&engine.Request{Prompt: make([]int32, 255), MaxTokens: 1}, 1); err != nil {
		t.Fatalf("exact fit with least 1: %v", err)
	}
	if err := e.Check(&engine.Request{Prompt: make([]int32, 256), MaxTokens: 0}, 1); !errors.As(err, &cl) || cl.MaxTokens != 1 {
		t.Fatalf("full prompt with least 1: %v", err)
	}
	for _, c := range []struct{ ask, want int }{{0, 256}, {-3, 256}, {32, 32}, {256, 256}, {1000, 256}} {
		w := engine.NewWindow(newBackend(), c.ask)
		if w.Window() != c.want {
			t.Fatalf("NewWindow(%d): window %d, want %d", c.ask, w.Window(), c.want)
		}
		err := w.Check(&engine.Request{Prompt: make([]int32, c.want), MaxTokens: 1}, 0)
		if !errors.As(err, &cl) || cl.Context != c.want {
			t.Fatalf("NewWindow(%d): one past the window: %v", c.ask, err)
		}
	}
}
