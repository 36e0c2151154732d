package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"
)

// startServing runs h under serveUntilSignal with grace and returns the URL, the signal channel
// and the result channel.
func startServing(t *testing.T, h http.HandlerFunc, grace time.Duration) (string, chan os.Signal, chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: time.Second}
	sig := make(chan os.Signal, 2)
	errc := make(chan error, 1)
	go func() { errc <- serveUntilSignal(hs, ln, sig, grace) }()
	return "http://" + ln.Addr().String(), sig, errc
}

func waitResult(t *testing.T, errc chan error, within time.Duration) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(within):
		t.Fatalf("serveUntilSignal did not return within %v", within)
		return nil
	}
}

func TestShutdownCleanDrain(t *testing.T) {
	url, sig, errc := startServing(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		io.WriteString(w, "ok")
	}, 5*time.Second)
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get(url)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- string(b)
	}()
	time.Sleep(20 * time.Millisecond) // the request is in flight
	sig <- syscall.SIGTERM
	if err := waitResult(t, errc, 5*time.Second); err != nil {
		t.Fatalf("clean drain: %v", err)
	}
	if b := <-got; b != "ok" {
		t.Fatalf("in-flight request got %q", b)
	}
}

// TestShutdownCancelsAfterGrace: a request that outlives the grace period has its context
// cancelled (the engine stops on it) and serveUntilSignal returns soon after the grace.
func TestShutdownCancelsAfterGrace(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan struct{})
	url, sig, errc := startServing(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done() // a long prefill that honours cancellation
		close(cancelled)
	}, 200*time.Millisecond)
	go func() {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	sig <- os.Interrupt
	var g errGraceOver
	if err := waitResult(t, errc, 5*time.Second); !errors.As(err, &g) {
		t.Fatalf("after the grace period: %v", err)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the in-flight request was not cancelled")
	}
}

// TestShutdownSecondSignal: a second signal during the drain returns at once even when a handler
// ignores cancellation.
func TestShutdownSecondSignal(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	url, sig, errc := startServing(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
	}, time.Hour)
	go func() {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	sig <- os.Interrupt
	time.Sleep(20 * time.Millisecond)
	sig <- os.Interrupt
	if err := waitResult(t, errc, 5*time.Second); !errors.Is(err, errAbandoned) {
		t.Fatalf("second signal: %v", err)
	}
}
