# posed — build, test and benchmark. `make help` lists the targets.

GO       ?= go
PREFIX   ?= /usr/local
DESTDIR  ?=
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
BUILD    := CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)'
BINARIES := posectl
DATA     ?= $(abspath ../shared/data)

.PHONY: all build test bench fuzz lint cross clean help

all: build

help:
	@echo "build   build $(BINARIES) into bin/ (static, version $(VERSION))"
	@echo "test    vet and run the unit tests (the CI command)"
	@echo "bench   run the benchmarks (forward pass, EM iteration)"
	@echo "fuzz    fuzz the model-file loader for 1 minute per target"
	@echo "lint    gofmt, go vet, and the daemon's import-graph check"
	@echo "cross   static builds for linux/arm64 and linux/arm (GOARM=7) into dist/"

build:
	@mkdir -p bin
	$(BUILD) -o bin/ $(addprefix ./cmd/,$(BINARIES))

test:
	$(GO) vet ./...
	POSED_DATA=$(DATA) $(GO) test -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./infer/...
	$(GO) test -run '^$$' -bench EMIteration -benchtime 3x ./train/

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 60s ./infer/gllim/
	$(GO) test -run '^$$' -fuzz '^FuzzParseSealed$$' -fuzztime 60s ./infer/gllim/

lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo 'gofmt: files above need formatting'; exit 1; }
	$(GO) vet ./...
	@! $(GO) list -deps ./infer/... | grep -E '^(gonum.org/|github.com/edgepose/posed/train$$)' \
		|| { echo 'infer/ must not depend on the trainer or gonum'; exit 1; }

cross:
	@mkdir -p dist
	for b in $(BINARIES); do \
		GOOS=linux GOARCH=arm64 $(BUILD) -o dist/$$b-linux-arm64 ./cmd/$$b && \
		GOOS=linux GOARCH=arm GOARM=7 $(BUILD) -o dist/$$b-linux-armv7 ./cmd/$$b || exit 1; \
	done

clean:
	rm -rf bin dist
