package webui_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/lily-engine/lily/internal/webui"
)

// The fixture model has random weights: its replies are noise, but they are the server's noise,
// and the page must show exactly what was streamed. The prompts and seeds below are ones whose
// sampled tokens all lie in the tokenizer's vocabulary (the fixture's embedding has 63 padded
// ids past it, which the server cannot decode yet: issue 18).
const fixture = "../../fixtures/models/tiny-a/mlx"

// reply is what the page shows of its last assistant turn.
type reply struct {
	Reasoning, Content, Figures, Status string
	Busy, ThinkingOpen, HasThinking     bool
}

const lastReplyJS = `(() => {
	const all = document.querySelectorAll(".msg.assistant");
	const n = all[all.length - 1];
	if (!n) return null;
	const d = n.querySelector("details.thinking");
	return {
		Reasoning: d ? d.querySelector(".reasoning").textContent : "",
		Content: n.querySelector(".body").textContent,
		Figures: n.querySelector(".figures").textContent,
		Status: n.querySelector(".status").textContent,
		Busy: n.getAttribute("aria-busy") === "true",
		HasThinking: !!d, ThinkingOpen: !!(d && d.open),
	};
})()`

// idleJS holds when no reply is streaming.
const idleJS = `!document.getElementById("send").hidden && !document.querySelector(".msg.assistant[aria-busy=true]")`

func (b *browser) lastReply() reply { return eval[reply](b, lastReplyJS) }

// send types text into the composer and presses Enter, then waits for the reply to end.
func (b *browser) send(text string) reply {
	b.t.Helper()
	b.do(chromedp.SetValue(chromedp.ID("input"), text), chromedp.SendKeys(chromedp.ID("input"), kb.Enter))
	b.wait(30*time.Second, idleJS)
	return b.lastReply()
}

// setting sets a settings field as typing would (an input event).
func (b *browser) setting(id, value string) {
	b.t.Helper()
	eval[bool](b, `(() => { const e = document.getElementById(`+jsString(id)+`); e.value = `+jsString(value)+
		`; e.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`)
}

// figure returns one figure of the last reply ("" when absent).
func (b *browser) figure(name string) string {
	return eval[string](b, `(() => { const f = [...document.querySelectorAll(".msg.assistant .fig-`+name+`")].pop(); return f ? f.textContent : ""; })()`)
}

// chatAPI sends a non-streaming chat request straight to the server: the oracle for what the page shows.
func chatAPI(t *testing.T, url string, body map[string]any) (reasoning, content string, tokens int) {
	t.Helper()
	body["stream"] = false
	delete(body, "stream_options")
	raw, _ := json.Marshal(body)
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Choices []struct {
			Message struct {
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 || len(r.Choices) != 1 {
		t.Fatalf("direct chat request: status %d, %v", resp.StatusCode, err)
	}
	return r.Choices[0].Message.ReasoningContent, r.Choices[0].Message.Content, r.Usage.CompletionTokens
}

// TestBrowser runs every browser test in one chromium, each in its own tab: against a real
// `lily serve` built from this tree, and against the server's handler over a scripted model.
func TestBrowser(t *testing.T) {
	root := newBrowser(t, chromedp.Flag("host-resolver-rules", "MAP lily.test 127.0.0.1"))
	bin := buildLily(t)
	t.Run("lily serve", func(t *testing.T) { chatPage(t, root.tab(t), bin) })
	t.Run("api key", func(t *testing.T) { apiKey(t, root.tab(t), bin) })
	t.Run("rendering", func(t *testing.T) { rendering(t, root.tab(t)) })
	t.Run("stop within one step", func(t *testing.T) { stopWithinOneStep(t, root.tab(t)) })
	t.Run("own origin", func(t *testing.T) { ownOrigin(t, root.tab(t)) })
	t.Run("markdown fuzz", func(t *testing.T) { markdownFuzz(t, root.tab(t)) })
}

// chatPage drives the page against a real `lily serve` on a fixture model.
func chatPage(t *testing.T, b *browser, bin string) {
	srv := startLily(t, bin, "--model", fixture, "--backend", "fast", "--device", "cpu", "--ctx-size", "4096")
	b.do(chromedp.Navigate(srv.URL + "/"))
	b.wait(10*time.Second, `document.getElementById("model-info").textContent.includes("ctx")`)
	if got := eval[string](b, `document.getElementById("model-info").textContent`); got != "Qwen3.6-35B-A3B · fast · cpu · ctx 4,096" {
		t.Errorf("header %q", got)
	}

	t.Run("streamed reply with thinking", func(t *testing.T) {
		b.do(chromedp.Click(chromedp.ID("open-settings")))
		b.setting("set-temperature", "0")
		// Record every length the reasoning had while it streamed.
		eval[bool](b, `(() => { window.seen = new Set(); new MutationObserver(() => {
			const r = document.querySelector(".msg.assistant .reasoning"); if (r) seen.add(r.textContent.length);
		}).observe(document.getElementById("messages"), {subtree: true, childList: true, characterData: true}); return true; })()`)
		got := b.send("ok")
		if n := eval[int](b, `seen.size`); n < 3 {
			t.Errorf("the reply appeared in %d steps; want it streamed", n)
		}
		body := b.lastChat()
		if body["stream"] != true || body["temperature"] != 0.0 || body["seed"] != nil || body["max_tokens"] != nil {
			t.Errorf("request %v", body)
		}
		reasoning, content, tokens := chatAPI(t, srv.URL, body)
		if got.Reasoning != reasoning || got.Content != content || reasoning == "" {
			t.Errorf("the page shows reasoning %q and content %q; the server says %q and %q", got.Reasoning, got.Content, reasoning, content)
		}
		for _, f := range []string{"ttft", "prefill", "decode", "in", "cached", "out", "finish"} {
			if b.figure(f) == "" {
				t.Errorf("figure %s missing: %q", f, got.Figures)
			}
		}
		if out := b.figure("out"); out != "out "+itoa(tokens)+" tok" {
			t.Errorf("figure %q; the server generated %d tokens", out, tokens)
		}
		// All reasoning, no answer: the block stays open, and a click on its summary folds it.
		if !got.HasThinking || !got.ThinkingOpen {
			t.Fatalf("thinking block %+v", got)
		}
		b.do(chromedp.Click(chromedp.CSS(".msg.assistant details.thinking summary")))
		if b.lastReply().ThinkingOpen {
			t.Error("the thinking block did not collapse on a click")
		}
		b.do(chromedp.Click(chromedp.CSS(".msg.assistant details.thinking summary")))
		if !b.lastReply().ThinkingOpen {
			t.Error("the thinking block did not open again")
		}
		for _, r := range b.requests() {
			if r.Method == "POST" && r.Headers["Content-Type"] != "application/json" {
				t.Errorf("%s %s sent Content-Type %v", r.Method, r.URL, r.Headers["Content-Type"])
			}
		}
		b.screenshot("desktop")
	})

	t.Run("settings reach the request", func(t *testing.T) {
		b.setting("set-system", "You are terse.")
		b.setting("set-temperature", "0.7")
		b.setting("set-top-p", "0.9")
		b.setting("set-max-tokens", "12")
		b.setting("set-seed", "13")
		b.do(chromedp.Click(chromedp.ID("thinking"))) // off
		first := b.send("hello")
		body := b.lastChat()
		msgs, _ := body["messages"].([]any)
		kw, _ := body["chat_template_kwargs"].(map[string]any)
		if body["temperature"] != 0.7 || body["top_p"] != 0.9 || body["max_tokens"] != 12.0 || body["seed"] != 13.0 ||
			kw["enable_thinking"] != false || len(msgs) != 4 || !strings.Contains(jsonOf(msgs[0]), "You are terse.") {
			t.Fatalf("request %v", body)
		}
		if b.figure("out") != "out 12 tok" || b.figure("finish") != "finish: length" || first.HasThinking {
			t.Fatalf("max_tokens 12 without thinking gave %+v", first)
		}
		b.do(chromedp.Click(chromedp.CSS(".msg.assistant .regen")))
		b.wait(30*time.Second, idleJS)
		if again := b.lastReply(); again.Content != first.Content {
			t.Errorf("the same seed gave %q, then %q", first.Content, again.Content)
		}
		b.setting("set-seed", "14")
		b.do(chromedp.Click(chromedp.CSS(".msg.assistant .regen")))
		b.wait(30*time.Second, idleJS)
		if other := b.lastReply(); other.Content == first.Content {
			t.Errorf("seeds 13 and 14 both gave %q", first.Content)
		}
	})

	t.Run("edit and resend", func(t *testing.T) {
		b.do(chromedp.Click(chromedp.CSS(`.msg.user[data-index="0"] .edit`)))
		b.do(chromedp.SetValue(chromedp.CSS(".msg.user .edit-box textarea"), "hi there"),
			chromedp.Click(chromedp.CSS(".msg.user .edit-send")))
		b.wait(30*time.Second, idleJS)
		msgs, _ := b.lastChat()["messages"].([]any)
		if len(msgs) != 2 || !strings.Contains(jsonOf(msgs[1]), `"hi there"`) {
			t.Fatalf("edited request messages %v", msgs)
		}
		if n := eval[int](b, `document.querySelectorAll(".msg").length`); n != 2 {
			t.Fatalf("%d messages after the edit, want 2", n)
		}
	})

	t.Run("stop mid-stream frees the server", func(t *testing.T) {
		b.do(chromedp.Click(chromedp.ID("new-chat")))
		b.do(chromedp.Click(chromedp.ID("reset-settings")))
		b.setting("set-temperature", "0.7")
		b.setting("set-seed", "13")
		b.do(chromedp.Click(chromedp.ID("thinking"))) // off
		b.do(chromedp.SetValue(chromedp.ID("input"), "hello"), chromedp.SendKeys(chromedp.ID("input"), kb.Enter))
		b.wait(30*time.Second, `/out ([5-9]|\d\d+) tok/.test(document.querySelector(".msg.assistant .figures").textContent)`)
		b.do(chromedp.KeyEvent(kb.Escape)) // Esc stops
		b.wait(10*time.Second, idleJS)
		if got := b.lastReply(); got.Status != "Stopped." || got.Content == "" {
			t.Fatalf("after Stop: %+v", got)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(srv.Log(), "path=/v1/chat/completions status=499") {
			if time.Now().After(deadline) {
				t.Fatalf("the server never saw the stream closed:\n%s", srv.Log())
			}
			time.Sleep(20 * time.Millisecond)
		}
		b.setting("set-max-tokens", "4")
		b.do(chromedp.Click(chromedp.CSS(".msg.assistant .regen")))
		b.wait(30*time.Second, idleJS)
		if b.figure("finish") != "finish: length" {
			t.Fatalf("the next request after Stop: %+v", b.lastReply())
		}
	})

	t.Run("reload keeps the conversations", func(t *testing.T) {
		before := eval[string](b, `document.getElementById("messages").innerText`)
		titles := eval[string](b, `document.getElementById("conv-list").innerText`)
		b.do(chromedp.Reload())
		b.wait(10*time.Second, `document.querySelectorAll(".msg").length > 0`)
		if after := eval[string](b, `document.getElementById("messages").innerText`); after != before {
			t.Errorf("after a reload\n%q\nwas\n%q", after, before)
		}
		if after := eval[string](b, `document.getElementById("conv-list").innerText`); after != titles || eval[int](b, `document.querySelectorAll("#conv-list li").length`) != 2 {
			t.Errorf("conversation list %q, was %q", after, titles)
		}
		b.do(chromedp.Click(chromedp.CSS("#conv-list li.current .rename")))
		b.do(chromedp.SetValue(chromedp.CSS("#conv-list li input"), "Renamed chat"), chromedp.SendKeys(chromedp.CSS("#conv-list li input"), kb.Enter))
		b.do(chromedp.Click(chromedp.CSS("#conv-list li:not(.current) .delete")), chromedp.Click(chromedp.CSS("#conv-list li:not(.current) .delete")))
		b.do(chromedp.Reload())
		b.wait(10*time.Second, `document.querySelectorAll(".msg").length > 0`)
		if got := eval[string](b, `document.getElementById("conv-list").innerText`); !strings.Contains(got, "Renamed chat") || eval[int](b, `document.querySelectorAll("#conv-list li").length`) != 1 {
			t.Errorf("after rename and delete: %q", got)
		}
		exported := eval[string](b, `(async () => { const b = await new Promise((ok) => {
			const orig = URL.createObjectURL; URL.createObjectURL = (blob) => { ok(blob); URL.createObjectURL = orig; return orig(blob); };
			document.getElementById("export").click(); }); return b.text(); })()`)
		var doc struct {
			Conversations []struct {
				Title    string `json:"title"`
				Messages []any  `json:"messages"`
			} `json:"conversations"`
		}
		if err := json.Unmarshal([]byte(exported), &doc); err != nil || len(doc.Conversations) != 1 || doc.Conversations[0].Title != "Renamed chat" || len(doc.Conversations[0].Messages) != 2 {
			t.Errorf("export: %v %.300s", err, exported)
		}
	})

	t.Run("narrow layout", func(t *testing.T) {
		b.do(chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile))
		b.do(chromedp.SetValue(chromedp.ID("input"), strings.Repeat("unbroken", 40)+"\n```\n"+strings.Repeat("code ", 60)+"\n```"))
		b.setting("set-max-tokens", "8")
		b.do(chromedp.Click(chromedp.ID("send")))
		b.wait(30*time.Second, idleJS)
		if w := eval[[]int](b, `[document.documentElement.scrollWidth, document.documentElement.clientWidth,
			document.getElementById("messages").scrollWidth, document.getElementById("messages").clientWidth]`); w[0] > w[1] || w[2] > w[3] {
			t.Errorf("horizontal scroll at 375 px: page %d > %d or messages %d > %d", w[0], w[1], w[2], w[3])
		}
		b.screenshot("narrow-375")
		b.do(chromedp.Click(chromedp.ID("open-side")))
		b.wait(2*time.Second, `document.getElementById("sidebar").getBoundingClientRect().left >= 0`)
		b.screenshot("narrow-375-conversations")
		b.do(chromedp.Click(chromedp.ID("scrim")), chromedp.EmulateViewport(1280, 900))
	})

	t.Run("weight and origin", func(t *testing.T) {
		if err := sameOrigin(b.requests(), srv.URL); err != nil {
			t.Error(err)
		}
		weight := eval[int](b, `performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource"))
			.filter((e) => !e.name.includes("/v1/")).reduce((s, e) => s + e.decodedBodySize, 0)`)
		if weight <= 0 || weight > webui.Budget {
			t.Errorf("the page loaded %d bytes; the budget is %d", weight, webui.Budget)
		}
	})
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
