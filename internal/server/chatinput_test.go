package server_test

import (
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/server/servertest"
)

// TestToolsMustBeFunctionObjects: tools entries that are not function tool objects are refused
// (they were rendered into the prompt literally), on the chat and tokenize routes alike.
func TestToolsMustBeFunctionObjects(t *testing.T) {
	e := servertest.New(t)
	e.Script("ok")
	msgs := `"messages":[{"role":"user","content":"Hi"}]`
	for tools, param := range map[string]string{
		`[1,null,"s"]`:                                       "tools[0]",
		`[{"type":"function","function":{}}]`:                "tools[0].function.name",
		`[{"type":"code","function":{"name":"f"}}]`:          "tools[0].type",
		`[{"type":"function","function":{"name":"f"}},null]`: "tools[1]",
		`[[]]`: "tools[0]",
		`{}`:   "tools",
	} {
		for _, path := range []string{"/v1/chat/completions", "/tokenize"} {
			code, body := e.Post(path, `{`+msgs+`,"tools":`+tools+`}`)
			if code != 400 || !strings.Contains(body, `"param":"`+param+`"`) {
				t.Errorf("%s tools %s: %d %s", path, tools, code, body)
			}
		}
	}
	ok := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
	if code, body := e.Post("/v1/chat/completions", `{`+msgs+`,"tools":`+ok+`,"max_tokens":2}`); code != 200 {
		t.Fatalf("a valid tool: %d %s", code, body)
	}
}
