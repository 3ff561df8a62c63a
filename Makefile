# idemkit: make run serves the example API locally; make test runs every
# test CI runs. See README.md.

GO       ?= go
PORT     ?= 3000
FUZZTIME ?= 30s
PKGS     := ./...

include mk/dynalite.mk

.PHONY: all test lint vet fmt-check run bench fuzz build clean reliability

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
## (IDEMKIT_STORE=dynamodb: DynamoDB, see README.md "Local walkthrough")
run:
	$(GO) build -o bin/orders-local ./examples/orders/cmd/local
	exec ./bin/orders-local -addr 127.0.0.1:$(PORT)

## build: the Lambda bootstrap for linux/arm64 in bin/bootstrap
build:
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' -o bin/bootstrap ./examples/orders/cmd/lambda

.PHONY: deploy sam-local

## deploy: sam build && sam deploy (SAM CLI and AWS credentials; SAM_ENV=prod for prod)
SAM_ENV ?= default
deploy:
	GOFLAGS=-tags=lambda.norpc CGO_ENABLED=0 sam build --config-env $(SAM_ENV)
	sam deploy --config-env $(SAM_ENV)

## sam-local: sam local start-api on 127.0.0.1:$(PORT) (SAM CLI and Docker)
sam-local:
	GOFLAGS=-tags=lambda.norpc CGO_ENABLED=0 sam build
	sam local start-api --port $(PORT)

## bench: every performance figure in one table (starts dynalite; see
## docs/PERFORMANCE.md): round trips, capacity units, overhead ratio,
## CPU and allocations of both adapters, cold start, binary size
BENCH_OUT  ?= bin/bench
BENCH_TIME ?= 300ms
bench: deps
	@mkdir -p $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'BenchmarkV2$$|BenchmarkMiddleware$$|BenchmarkDynamoPath$$' -benchmem -benchtime $(BENCH_TIME) \
		./lambda/apigw ./httpmw ./internal/bench > $(BENCH_OUT)/gobench.txt
	@$(GO) run ./internal/bench/cmd/idembench -gobench $(BENCH_OUT)/gobench.txt $(BENCH_FLAGS) > $(BENCH_OUT)/idembench.txt; \
		status=$$?; cat $(BENCH_OUT)/idembench.txt; exit $$status

## reliability: the reliability scenarios at full size, figures in
## bin/reliability.log (docs/RELIABILITY.md quotes them)
RELIABILITY_RUN := ^(TestFaultInjection|TestCrashAfterClaim|TestStorm.*|TestEndToEndStorm|TestRegions.*|TestPropertyNoCrossScope.*|TestLateArrivals|TestBadInputs)$$
reliability: deps
	@mkdir -p bin
	@IDEMKIT_RELIABILITY=full $(GO) test -race -count=1 -timeout 30m -v -run '$(RELIABILITY_RUN)' ./integration/ > bin/reliability.log 2>&1; \
		status=$$?; grep -E '^(--- |ok|FAIL)|RELIABILITY |panic' bin/reliability.log; exit $$status

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
