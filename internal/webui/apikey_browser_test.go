package webui_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// apiKey: against `lily serve --api-key`, the page asks for the key once, says when
// it is wrong, sends it on every API request, keeps it for the tab only (sessionStorage) and
// across a reload.
func apiKey(t *testing.T, b *browser, bin string) {
	const key = "s3cret-key"
	srv := startLily(t, bin, "--model", fixture, "--backend", "fast", "--device", "cpu", "--api-key", key)
	b.do(chromedp.Navigate(srv.URL + "/"))
	b.wait(10*time.Second, `document.getElementById("key-dialog").open`)
	b.screenshot("api-key")
	b.do(chromedp.KeyEvent(kb.Escape))
	if !eval[bool](b, `document.getElementById("key-dialog").open`) {
		t.Fatal("Esc closed the key dialog, leaving the request without a key")
	}
	b.do(chromedp.SendKeys(chromedp.ID("key-input"), "wrong"+kb.Enter))
	b.wait(10*time.Second, `document.getElementById("key-dialog").open && document.getElementById("key-reason").textContent.includes("not accepted")`)
	b.do(chromedp.SendKeys(chromedp.ID("key-input"), key), chromedp.Click(chromedp.ID("key-save")))
	b.wait(10*time.Second, `!document.getElementById("key-dialog").open && document.getElementById("model-info").textContent.includes("fast")`)

	b.do(chromedp.Click(chromedp.ID("open-settings")))
	b.setting("set-temperature", "0")
	b.setting("set-max-tokens", "4")
	got := b.send("ok")
	if b.figure("finish") != "finish: length" || got.Status != "" {
		t.Fatalf("reply with the key: %+v", got)
	}
	// The first request has no key to send (it is how the page learns that one is needed); each
	// later one carries the key typed so far, and the chat request the right one.
	var api []request
	for _, r := range b.requests() {
		if strings.Contains(r.URL, "/v1/") {
			api = append(api, r)
		}
	}
	if len(api) < 4 || api[0].Headers["Authorization"] != nil || api[1].Headers["Authorization"] != "Bearer wrong" {
		t.Fatalf("requests %+v", api)
	}
	for _, r := range api[2:] {
		if r.Headers["Authorization"] != "Bearer "+key {
			t.Errorf("%s %s: Authorization %v", r.Method, r.URL, r.Headers["Authorization"])
		}
	}
	if err := sameOrigin(b.requests(), srv.URL); err != nil {
		t.Error(err)
	}
	if eval[string](b, `sessionStorage.getItem("lily.apiKey")`) != key {
		t.Error("the key is not in sessionStorage")
	}
	if strings.Contains(eval[string](b, `JSON.stringify(localStorage)`), key) {
		t.Error("the key leaked into localStorage")
	}
	b.do(chromedp.Reload())
	b.wait(10*time.Second, `document.getElementById("model-info").textContent.includes("fast")`)
	if eval[bool](b, `document.getElementById("key-dialog").open`) {
		t.Error("asked for the key again after a reload")
	}
}
