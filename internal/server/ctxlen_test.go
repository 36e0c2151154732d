package server_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/lily-engine/lily/internal/server"
	"github.com/lily-engine/lily/internal/server/servertest"
)

// TestContextLengthHugeMax: a max_tokens near MaxInt must not wrap the context check: 400
// context_length_exceeded on both endpoints, for max_tokens and max_completion_tokens.
func TestContextLengthHugeMax(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.CtxSize = 32 })
	e.Script("ok")
	for _, v := range []string{fmt.Sprint(math.MaxInt64), fmt.Sprint(math.MaxInt64 - 3), "33", "4611686018427387904"} {
		for _, req := range []struct{ path, body string }{
			{"/v1/completions", `{"prompt":"Hi","max_tokens":` + v + `}`},
			{"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":` + v + `}`},
			{"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_completion_tokens":` + v + `}`},
		} {
			code, body := e.Post(req.path, req.body)
			if code != 400 || !strings.Contains(body, "context_length_exceeded") {
				t.Fatalf("%s %s: %d %s", req.path, req.body, code, body)
			}
		}
	}
}

// TestContextLengthRapid: over the whole int range of max_tokens, completions answer 200 exactly
// when prompt + max_tokens fits the context and 400 context_length_exceeded otherwise.
func TestContextLengthRapid(t *testing.T) {
	e := servertest.New(t, func(c *server.Config) { c.CtxSize = 32 })
	e.Script("ok")
	prompt := len(e.Tok.Encode("Hi"))
	rapid.Check(t, func(rt *rapid.T) {
		m := rapid.OneOf(rapid.IntRange(0, math.MaxInt), rapid.IntRange(math.MaxInt-64, math.MaxInt), rapid.IntRange(0, 64)).Draw(rt, "max")
		code, body := e.Post("/v1/completions", fmt.Sprintf(`{"prompt":"Hi","max_tokens":%d}`, m))
		fits := m <= 32-prompt
		if fits && code != 200 || !fits && (code != 400 || !strings.Contains(body, "context_length_exceeded")) {
			rt.Fatalf("max_tokens %d: %d %s", m, code, body)
		}
	})
}
