# idemkit: make run serves the example API locally; make test runs every
# test CI runs. See README.md.

GO       ?= go
PORT     ?= 3000
FUZZTIME ?= 30s
PKGS     := ./...

include mk/dynalite.mk

.PHONY: all test lint vet fmt-check run bench fuzz build clean

all: test

## test: lint, then every test with the race detector (starts dynalite)
test: deps lint
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

## lint: gofmt and go vet
lint: fmt-check vet

fmt-check:
	@out=$$(gofmt -l . 2>/dev/null | grep -v '^node_modules/' || true); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

## run: the example API on 127.0.0.1:$(PORT) with the in-memory store
run:
	@echo "The example API arrives with examples/orders; nothing to run yet."

## bench: the benchmarks
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## fuzz: every fuzz target for $(FUZZTIME) each
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$f"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

clean:
	rm -rf bin dist .aws-sam
