package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/lily-engine/lily/internal/server"
	"github.com/lily-engine/lily/internal/webui"
)

// serveOptions are the flags of `lily serve`.
type serveOptions struct {
	flags            *modelFlags // --model, --backend, --device, --int16-activations
	host             string
	spec             backendSpec // the backend the flags name, with --ctx-size
	port, queue      int
	apiKey           string
	maxBody          int64
	allowHosts, cors []string
	keepAlive        time.Duration
	name             string
	warmUp           bool
}

// serveWarmUpTokens is the prompt length of serve's warm-up: long enough to take the prefill's
// multi-token paths (the integer GEMM tiles, experts with several tokens), short enough to cost
// a fraction of a second on the full model.
const serveWarmUpTokens = 32

func serveFlags(o *serveOptions, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("lily serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	o.flags = addModelFlags(fs, "compute backend: fast or ref (the slow oracle)", defaultDeviceHelp)
	fs.StringVar(&o.host, "host", "127.0.0.1", "address to bind; a loopback address also enables the Host-header allowlist")
	fs.IntVar(&o.port, "port", 8080, "port to listen on")
	fs.IntVar(&o.flags.spec.ctxSize, "ctx-size", 0, "context window in tokens (0: the model's maximum)")
	fs.StringVar(&o.apiKey, "api-key", "", "require the header Authorization: Bearer KEY (default: $LILY_API_KEY, else no key)")
	fs.IntVar(&o.queue, "queue", 16, "requests that may wait while one runs; more get 503")
	fs.Int64Var(&o.maxBody, "max-body", 8<<20, "request body limit in bytes")
	fs.StringArrayVar(&o.allowHosts, "allow-host", nil, "extra Host-header name to accept when bound to loopback (repeatable)")
	fs.StringArrayVar(&o.cors, "cors-origin", nil, "extra CORS origin to allow besides localhost ones, or * (repeatable)")
	fs.DurationVar(&o.keepAlive, "keep-alive", 5*time.Second, "SSE keep-alive comment interval during long prefills")
	fs.BoolVar(&o.warmUp, "warmup", true, fmt.Sprintf("before listening, run a %d-token prompt and a decode step once, uncounted, so that the first request does not pay the first-touch costs (fast backend; --warmup=false: listen at once)", serveWarmUpTokens))
	fs.StringVar(&o.name, "served-model-name", "Qwen3.6-35B-A3B", "model id reported by /v1/models and accepted in requests")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: lily serve "+modelUsage("fast|ref")+" [--host H] [--port P] [flags]\n\n"+
			"Serves the model over an OpenAI-compatible HTTP API: /v1/chat/completions, /v1/completions,\n"+
			"/v1/models, /tokenize, /detokenize, /health, /v1/lily/info; a chat page at /.\n\nflags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// cmdServe runs `lily serve` until SIGINT or SIGTERM.
func cmdServe(args []string, stdout, stderr io.Writer) int {
	var o serveOptions
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" {
			serveFlags(&o, stdout).Usage()
			return 0
		}
	}
	fs := serveFlags(&o, stderr)
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "lily serve: %v\n\n", err)
		fs.Usage()
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lily serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var err error
	if o.spec, err = o.flags.single(); err != nil {
		fmt.Fprintf(stderr, "lily serve: %v\n", err)
		return 2
	}
	if o.port < 0 || o.port > 65535 || o.queue < 0 || o.spec.ctxSize < 0 || o.maxBody <= 0 {
		fmt.Fprintln(stderr, "lily serve: --port, --queue, --ctx-size and --max-body must be in range")
		return 2
	}
	if o.apiKey == "" {
		o.apiKey = os.Getenv("LILY_API_KEY")
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	bar := newServeProgress(stderr)
	m, closeModel, err := openModel(*o.flags.dir, o.spec, bar.update)
	bar.done()
	if err != nil {
		fmt.Fprintf(stderr, "lily serve: %v\n", err)
		return 1
	}
	abandoned := false // a second signal leaves at once: the engine may be mid-step, so nothing is closed
	defer func() {
		if !abandoned {
			closeModel()
		}
	}()
	m.Name = o.name
	queue := o.queue
	if queue == 0 {
		queue = -1 // no waiting room
	}
	srv, err := server.New(server.Config{
		// No CtxSize: --ctx-size is applied once, by the backend (its MaxContext), which the server reads.
		Model: m, APIKey: o.apiKey, QueueSize: queue, MaxBody: o.maxBody,
		Loopback: isLoopbackHost(o.host), AllowHosts: o.allowHosts, CORSOrigins: o.cors,
		KeepAlive: o.keepAlive, Logger: logger, Page: webui.Handler(),
	})
	if err != nil {
		fmt.Fprintf(stderr, "lily serve: %v\n", err)
		return 1
	}
	defer func() {
		if !abandoned {
			_ = srv.Close()
		}
	}()
	if o.warmUp && o.spec.name != "ref" { // the oracle would spend minutes on it at the real size
		start := time.Now()
		n, err := srv.WarmUp(context.Background(), serveWarmUpTokens)
		if err != nil {
			fmt.Fprintf(stderr, "lily serve: %v\n", err)
			return 1
		}
		logger.Info("warmed up", "prompt_tokens", n, "duration", time.Since(start).Round(time.Millisecond))
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.host, strconv.Itoa(o.port)))
	if err != nil {
		fmt.Fprintf(stderr, "lily serve: %v\n", err)
		return 1
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	logger.Info("serving", "url", "http://"+ln.Addr().String(), "model", m.Name, "backend", o.spec.name, "device", m.Device)
	if err := serveUntilSignal(srv.HTTPServer(ln.Addr().String()), ln, sig, shutdownGrace); err != nil {
		abandoned = errors.Is(err, errAbandoned)
		fmt.Fprintf(stderr, "lily serve: %v\n", err)
		return 1
	}
	logger.Info("shut down cleanly")
	return 0
}

// isLoopbackHost reports whether the bind address only accepts local connections.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
