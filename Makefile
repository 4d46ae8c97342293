# asb — two commands do everything on a fresh machine:
#   make run    build and start the controller (embedded SQLite in ./data)
#   make test   vet, format check and the whole test suite

GO      ?= go
BIN     ?= bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

# go-sqlite3 is cgo.
export CGO_ENABLED := 1

.PHONY: run build test test-short vet fmt-check bench load fuzz clean

run: build
	./$(BIN)/asb serve

# asb itself, plus the static in-box hook binary for both host
# architectures (asb installs the one matching its own into every box).
build:
	@mkdir -p $(BIN)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/asb ./cmd/asb
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -o $(BIN)/asb-hook-linux-amd64 ./cmd/asb-hook
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -o $(BIN)/asb-hook-linux-arm64 ./cmd/asb-hook

test: vet fmt-check
	$(GO) test -race -count=1 -timeout 30m ./...
	$(MAKE) fuzz

test-short:
	$(GO) test -short -count=1 ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# Every benchmark once, as one table: each figure, its baseline measured
# in the same run and their ratio (naming convention: cmd/asb-bench). The
# raw go test output is kept in $(BIN)/bench.txt. Nothing here asserts a
# wall-clock threshold.
bench:
	@mkdir -p $(BIN)
	$(GO) run ./cmd/asb-bench -timeout 15m -raw $(BIN)/bench.txt ./...

# A controller on loopback under concurrent runs and webhooks (fake hosts,
# real SQLite, real HTTP): throughput, latency percentiles, memory and
# goroutines per active run; fails if they do not come back after the
# load. Bigger: make load LOAD_FLAGS='-runs 200 -webhooks 2000 -rate 200'.
LOAD_FLAGS ?= -runs 20 -webhooks 200 -rate 50
load:
	$(GO) run ./cmd/asb-load $(LOAD_FLAGS)

# A short pass of every fuzz target in the project (found with go test
# -list, so a new one is never forgotten), FUZZ_TIME each: 24
# targets, under three minutes. A failing input is saved under the
# package's testdata/fuzz/ and then replays in every go test run; that,
# or a build failure, fails the pass. The engine itself sometimes ends a
# short run with "context deadline exceeded" and no input: such a target
# is run once more, and reported (not failed) if it happens again.
FUZZ_TIME ?= 4s
fuzz:
	@targets="$$($(GO) test -list '^Fuzz' ./... | awk '/^Fuzz/ { n[++c] = $$1 } /^ok / { for (i = 1; i <= c; i++) print $$2 ":" n[i]; c = 0 }')"; \
	if [ -z "$$targets" ]; then echo "no fuzz targets found"; exit 1; fi; \
	for t in $$targets; do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg, $(FUZZ_TIME))"; \
		for try in 1 2; do \
			if out="$$($(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZ_TIME) "$$pkg" 2>&1)"; then break; fi; \
			case "$$out" in *"Failing input written to"*|*"[build failed]"*) echo "$$out"; exit 1;; esac; \
			if [ $$try = 2 ]; then echo "$$out"; echo "fuzz $$name: the fuzzing engine failed twice without a failing input (not a finding)"; fi; \
		done; \
	done

clean:
	rm -rf $(BIN)
