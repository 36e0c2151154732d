package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// shutdownGrace is how long in-flight requests may run after the first SIGINT or SIGTERM.
const shutdownGrace = 10 * time.Second

// errAbandoned: a second signal ended the drain; in-flight work was cancelled, not awaited.
var errAbandoned = errors.New("second signal: stopped without waiting for in-flight requests")

// errGraceOver: requests were still running when the grace period ended; they were cancelled.
type errGraceOver struct{ grace time.Duration }

func (e errGraceOver) Error() string {
	return fmt.Sprintf("requests still running after the %v grace period were cancelled", e.grace)
}

// serveUntilSignal runs hs on ln until the first value on sig, then drains: the listener closes,
// in-flight requests get grace to finish (nil when they all do); when it ends, every request's
// context is cancelled (the engine stops within one step) and the error is errGraceOver. A second
// value on sig cancels everything and returns errAbandoned at once.
func serveUntilSignal(hs *http.Server, ln net.Listener, sig <-chan os.Signal, grace time.Duration) error {
	base, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	hs.BaseContext = func(net.Listener) context.Context { return base }
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-sig:
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- hs.Shutdown(sctx) }()
	select {
	case err := <-drained:
		if err == nil {
			if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		cancelAll()
		_ = hs.Close()
		return errGraceOver{grace}
	case <-sig:
		cancelAll()
		_ = hs.Close()
		return errAbandoned
	}
}
