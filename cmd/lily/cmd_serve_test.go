package main

import (
	"bytes"
	"strings"
	"testing"
)

func runServe(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cmdServe(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestServeFlags(t *testing.T) {
	code, out, errs := runServe("--help")
	if code != 0 || errs != "" {
		t.Fatalf("--help: %d %q", code, errs)
	}
	for _, f := range []string{"--model", "--backend", "--host", "--port", "--ctx-size", "--api-key", "--queue",
		"--max-body", "--allow-host", "--cors-origin", "--warmup"} {
		if !strings.Contains(out, f) {
			t.Errorf("--help lacks %s", f)
		}
	}
	t.Setenv("HF_HUB_CACHE", t.TempDir()) // an empty cache: no real checkpoint to find
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--bogus"}, 2, "unknown flag"},
		{[]string{"--backend", "gpu"}, 2, "ref or fast"},
		{[]string{"--port", "70000"}, 2, "in range"},
		{[]string{"extra"}, 2, "unexpected argument"},
		{[]string{}, 1, "hf download mlx-community/Qwen3.6-35B-A3B-4bit"},
		{[]string{"--model", "/nonexistent/lily"}, 1, "no such file"},
		{[]string{"--model", t.TempDir()}, 1, "config.json"},
		{[]string{"--device", "tpu", "--backend", "fast", "--model", t.TempDir()}, 2, `unknown --device "tpu"`}, // before the checkpoint is read
	} {
		code, _, errs := runServe(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errs, tc.code, tc.msg)
		}
	}
}

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "localhost": true, "::1": true, "[::1]": true, "127.0.0.2": true,
		"0.0.0.0": false, "": false, "192.168.1.2": false, "example.com": false,
	} {
		if got := isLoopbackHost(host); got != want {
			t.Errorf("%q: %v", host, got)
		}
	}
}

func TestServeProgress(t *testing.T) {
	var b bytes.Buffer
	p := newServeProgress(&b) // a buffer is not a terminal: silent
	p.update(5, 10)
	p.done()
	if b.Len() != 0 {
		t.Fatalf("drew on a non-terminal: %q", b.String())
	}
	p.on = true
	p.update(5, 10)
	p.update(5, 10) // same percentage: no redraw
	p.update(10, 10)
	p.done()
	if got := b.String(); strings.Count(got, "\r") != 2 || !strings.Contains(got, " 50%") || !strings.HasSuffix(got, "100%\n") {
		t.Fatalf("bar %q", got)
	}
}
