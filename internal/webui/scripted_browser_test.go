package webui_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/lily-engine/lily/internal/server"
	"github.com/lily-engine/lily/internal/server/servertest"
	"github.com/lily-engine/lily/internal/webui"
)

// scripted serves the page from the real server handler over servertest's scripted model, whose
// replies (reasoning, Markdown, tool calls) and step time the test chooses; a random-weight
// fixture says none of these on demand.
func scripted(t *testing.T, b *browser, script string, step time.Duration) *servertest.Env {
	t.Helper()
	e := servertest.New(t, func(c *server.Config) { c.Page = webui.Handler() })
	e.Script(script)
	e.B.DecodeDelay = step
	b.do(chromedp.Navigate(e.TS.URL + "/"))
	b.wait(10*time.Second, `document.getElementById("model-info").textContent.includes("ctx")`)
	return e
}

// rendering: the thinking block streams open and collapses when the answer starts;
// Markdown with a code block (and its copy button) and a tool call as a card.
func rendering(t *testing.T, b *browser) {
	const script = "Let me think.\nStill thinking.\n</think>\n\nHere is **bold** and `code`:\n" +
		"```go\nfmt.Println(\"hi\")\n```\n" +
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	scripted(t, b, script, 8*time.Millisecond)
	// Note the thinking block's state whenever the reply changes: while only reasoning has
	// arrived, and once the answer has started.
	eval[bool](b, `(() => { window.thinkingOpen = new Set(); window.answerOpen = new Set();
		new MutationObserver(() => {
			const n = document.querySelector(".msg.assistant"); if (!n) return;
			const d = n.querySelector("details.thinking"); if (!d) return;
			(n.querySelector(".body").textContent ? answerOpen : thinkingOpen).add(d.open);
		}).observe(document.getElementById("messages"), {subtree: true, childList: true, characterData: true, attributes: true});
		return true; })()`)
	// The tool call is parsed only for a request that declares tools: give one in the settings.
	eval[bool](b, `(() => { const t = document.getElementById("set-tools");
		t.value = '[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]';
		t.dispatchEvent(new Event("input")); return true; })()`)
	// Shift+Enter starts a new line; Enter sends.
	b.do(chromedp.Focus(chromedp.ID("input")), chromedp.KeyEvent("weather"),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)), chromedp.KeyEvent("in Paris?"))
	if v := eval[string](b, `document.getElementById("input").value`); v != "weather\nin Paris?" || eval[int](b, `document.querySelectorAll(".msg").length`) != 0 {
		t.Fatalf("after Shift+Enter the composer holds %q", v)
	}
	b.do(chromedp.KeyEvent(kb.Enter))
	b.wait(30*time.Second, `document.querySelector(".msg.assistant") && `+idleJS)
	got := b.lastReply()
	if u := eval[string](b, `document.querySelector(".msg.user .body").textContent`); u != "weather\nin Paris?" {
		t.Errorf("sent %q", u)
	}
	if open := eval[[]bool](b, `[...thinkingOpen]`); len(open) != 1 || !open[0] {
		t.Errorf("while thinking the block was open: %v (want only true)", open)
	}
	if open := eval[[]bool](b, `[...answerOpen]`); len(open) == 0 || open[len(open)-1] {
		t.Errorf("once the answer started the block was open: %v (want it collapsed)", open)
	}
	if got.ThinkingOpen || got.Reasoning != "Let me think.\nStill thinking.\n" {
		t.Errorf("thinking block %+v", got)
	}
	if s := eval[string](b, `document.querySelector(".msg.assistant .body strong").textContent + "|" +
		document.querySelector(".msg.assistant .body p code").textContent + "|" +
		document.querySelector(".msg.assistant .code-head span").textContent + "|" +
		document.querySelector(".msg.assistant .code pre code").textContent`); s != `bold|code|go|fmt.Println("hi")` {
		t.Errorf("Markdown rendered as %q", s)
	}
	card := eval[[]string](b, `[...document.querySelectorAll(".msg.assistant .toolcall")].map((c) => c.innerText)`)
	if len(card) != 1 || !strings.Contains(card[0], "get_weather") || !strings.Contains(card[0], `"city": "Paris"`) {
		t.Errorf("tool call cards %q", card)
	}
	if f := b.figure("finish"); f != "finish: tool_calls" {
		t.Errorf("figure %q", f)
	}
	b.do(chromedp.Click(chromedp.CSS(".msg.assistant .code .copy")))
	b.wait(2*time.Second, `document.querySelector(".msg.assistant .code .copy").textContent === "Copied"`)
	b.screenshot("thinking-tools-code")
}

// stopWithinOneStep: Stop closes the stream and the server's generation ends within
// one decode step of the last token the page received; the next request is answered at once
// (without the stop it would wait for the rest of a 500-token script, 50 s). A step takes 100 ms,
// longer than the browser and the OS take to pass the stop on, even on a busy machine.
func stopWithinOneStep(t *testing.T, b *browser) {
	e := scripted(t, b, strings.Repeat("word ", 100), 100*time.Millisecond)
	b.do(chromedp.Click(chromedp.ID("thinking"))) // off: the script is all content
	b.do(chromedp.SetValue(chromedp.ID("input"), "go"), chromedp.Click(chromedp.ID("send")))
	b.wait(30*time.Second, `/out ([5-9]|\d\d+) tok/.test(document.querySelector(".msg.assistant .figures").textContent)`)
	b.do(chromedp.Click(chromedp.ID("stop")))
	b.wait(10*time.Second, idleJS)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(e.Logs.String(), "path=/v1/chat/completions status=499") {
		if time.Now().After(deadline) {
			t.Fatalf("the server never saw the stream closed:\n%s", e.Logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := b.lastReply()
	received, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(b.figure("out"), "out "), " tok"))
	if got.Status != "Stopped." || err != nil {
		t.Fatalf("after Stop: %+v (%v)", got, err)
	}
	// The first token comes from the prefill, each later one from a decode step.
	generated := int(e.B.Decodes.Load()) + 1
	t.Logf("the page received %d tokens; the server generated %d", received, generated)
	if generated-received > 2 {
		t.Errorf("the page received %d tokens, the server generated %d: more than one step after Stop", received, generated)
	}
	if generated >= 400 {
		t.Fatalf("the whole script ran (%d tokens)", generated)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Post(e.TS.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"next"}],"max_tokens":3}`))
	if err != nil {
		t.Fatalf("the next request: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the next request: %d", resp.StatusCode)
	}
}

// ownOrigin: served under a name that is not a loopback one (here lily.test, mapped to
// 127.0.0.1 inside chromium, and let in with --allow-host), the page still works. Its POSTs then
// carry Origin http://lily.test:PORT, which is not a localhost origin: the server must accept a
// request from its own origin whatever its CORS list says.
func ownOrigin(t *testing.T, b *browser) {
	e := servertest.New(t, func(c *server.Config) {
		c.Page = webui.Handler()
		c.AllowHosts = []string{"lily.test"}
	})
	e.Script("</think>\n\nHello from lily.test")
	// The same server on a listener that notes the Origin of each chat request.
	var mu sync.Mutex
	var origins []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			mu.Lock()
			origins = append(origins, r.Header.Get("Origin"))
			mu.Unlock()
		}
		e.Srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	origin := strings.Replace(ts.URL, "127.0.0.1", "lily.test", 1)
	b.do(chromedp.Navigate(origin + "/"))
	b.wait(10*time.Second, `document.getElementById("model-info").textContent.includes("ctx")`)
	if got := b.send("hi"); got.Content != "Hello from lily.test" || got.Status != "" {
		t.Fatalf("reply %+v", got)
	}
	if err := sameOrigin(b.requests(), origin); err != nil {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(origins) != 1 || origins[0] != origin {
		t.Errorf("chat requests came with Origin %q, want [%s]", origins, origin)
	}
}
