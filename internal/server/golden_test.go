package server_test

import (
	"github.com/lily-engine/lily/internal/server/servertest"
	"os"
	"path/filepath"
	"testing"
)

// Golden SSE transcripts: the exact bytes of a streamed chat and a streamed completion, with ids and
// timestamps fixed by the test clock and id source. Regenerate with LILY_UPDATE_GOLDEN=1 after an
// intended change, and read the diff.

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("LILY_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with LILY_UPDATE_GOLDEN=1 to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs.\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

func TestGoldenChatStream(t *testing.T) {
	e := servertest.New(t)
	e.Script(`Hm.</think>Hi <b>!<tool_call>{"name":"f","arguments":{"x":1}}</tool_call>`)
	code, _, body := e.Do("POST", "/v1/chat/completions", `{"model":"qwen-test","messages":[{"role":"user","content":"hi"}],
		"stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"f"}}],
		"logprobs":true,"top_logprobs":1,"stop":["never"]}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	checkGolden(t, "chat_stream.sse", body)
}

func TestGoldenCompletionStream(t *testing.T) {
	e := servertest.New(t)
	e.Script("cd")
	code, _, body := e.Do("POST", "/v1/completions", `{"prompt":"ab","stream":true,"echo":true,"logprobs":1,
		"return_token_ids":true,"stream_options":{"include_usage":true}}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	checkGolden(t, "completion_stream.sse", body)
}
