package sdkcheck_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lily-engine/lily/internal/server/servertest"
)

// TestNodeSDKs runs node/sdk.mjs, the official npm openai and @anthropic-ai/sdk packages against
// the server. CI installs them (.ci/run: npm ci in node/); without node or the packages the test
// is skipped, saying which is missing.
func TestNodeSDKs(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (CI installs it; see .ci/run)")
	}
	for _, pkg := range []string{"openai", "@anthropic-ai/sdk"} {
		if _, err := os.Stat(filepath.Join("node", "node_modules", pkg, "package.json")); err != nil {
			t.Skipf("npm package %s is not installed: run npm ci in internal/server/sdkcheck/node (.ci/run does)", pkg)
		}
	}
	e := servertest.New(t)
	answer := e.Tok.Encode("Thinking.</think>Hello from lily.")
	plain := e.Tok.Encode("Hello from lily.") // thinking off: the prompt already closed the block
	call := e.Tok.Encode(`x</think><tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>`)
	e.B.Respond = func(prompt []int32) []int32 {
		text, _ := e.Tok.Decode(prompt, false)
		last := text[strings.LastIndex(text, "<|im_start|>user")+1:]
		switch {
		case strings.Contains(last, "weather"):
			return call
		case strings.Contains(last, "schema"):
			return nil // the fake's own rule: nothing like JSON, held to the schema by the grammar
		case strings.HasSuffix(text, "</think>\n\n"):
			return plain
		}
		return answer
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "sdk.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "LILY_URL="+e.TS.URL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node sdk.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
