# lily — every target works on a fresh machine with Go installed.
GO        ?= go
# The fast CPU kernels use simd/archsimd; plain `go build` (no experiment) uses the portable fallback.
export GOEXPERIMENT ?= simd
BIN       := bin/lily
MODEL     ?=
ADDR_PORT ?= 8080

.PHONY: build test test-short run bench lint fmt fuzz darwin race clean

build:
	$(GO) build -o $(BIN) ./cmd/lily

# The README's test command; CI runs it through .ci/run.
test: lint darwin race
	$(GO) test -count=1 -timeout 25m ./...
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./... > /dev/null

# The race detector (and checkptr) over the packages where concurrency lives, with the SIMD kernels
# in use: the server, the engine, the fast backend end to end on its worker pool, the pool itself,
# and Metal's device goroutine (the emulator on Linux).
race:
	$(GO) test -race -count=1 -timeout 15m ./internal/server/ ./internal/engine/ ./fast/ ./metal/
	$(GO) test -race -count=1 -timeout 15m -run 'Pool' ./fast/cpu/

test-short:
	$(GO) test -short -count=1 ./...

# Serves the real checkpoint when found (--model or the Hugging Face cache), else the bundled tiny model.
run: build
	./scripts/run.sh $(BIN) "$(MODEL)" $(ADDR_PORT)

bench: build
	$(GO) test -run '^$$' -bench . -benchtime 2s ./fast/... ./internal/tokenizer/...

lint:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# The Metal bridge must at least type-check for Apple Silicon.
darwin:
	GOOS=darwin GOARCH=arm64 $(GO) build ./...
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...

FUZZTIME ?= 30s
FUZZ := ./internal/safetensors:FuzzParseHeader ./internal/checkpoint:FuzzParseHeader \
	./internal/checkpoint:FuzzParseConfig ./internal/tokenizer:FuzzParse ./internal/tokenizer:FuzzRoundTrip \
	./internal/tokenizer:FuzzStream ./internal/chat:FuzzRender ./internal/chat:FuzzParserSplit \
	./internal/server:FuzzDecodeChatRequest ./internal/server:FuzzDecodeCompletionRequest \
	./internal/safetensors:FuzzParseSmaps ./internal/server:FuzzDecodeResponsesRequest \
	./internal/server:FuzzDecodeMessagesRequest ./internal/grammar:FuzzFromSchema \
	./internal/tokenizer:FuzzMergeMatchesOracle ./internal/trace:FuzzParse

# Every parser's fuzzer for FUZZTIME each (minimization capped so a run ends on time).
fuzz:
	@for t in $(FUZZ); do pkg=$${t%%:*}; fn=$${t##*:}; echo "fuzz $$fn in $$pkg"; \
	  $(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg || exit 1; done

clean:
	rm -rf bin
