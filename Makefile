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

## bench: every performance figure in one report (starts dynalite, and
## moto_server when it is on PATH; see docs/PERFORMANCE.md): round trips,
## capacity units, overhead ratio (worst of 3 runs), throughput with 1, 8
## and 32 clients, CPU and allocations, cold start, binary size; each
## target "met" or "NOT met" with the measured gap
BENCH_OUT  ?= bin/bench
BENCH_TIME ?= 300ms
bench: deps
	@mkdir -p $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'BenchmarkV2$$|BenchmarkMiddleware$$|BenchmarkDynamoPath$$|BenchmarkCompressBody$$' -benchmem -benchtime $(BENCH_TIME) -p 1 \
		./lambda/apigw ./httpmw ./internal/bench ./dynamo > $(BENCH_OUT)/gobench.txt
	@$(GO) run ./internal/bench/cmd/idembench -gobench $(BENCH_OUT)/gobench.txt $(BENCH_FLAGS) > $(BENCH_OUT)/idembench.txt; \
		status=$$?; cat $(BENCH_OUT)/idembench.txt; exit $$status

## reliability: the reliability scenarios at full size, figures in
## bin/reliability.log (docs/RELIABILITY.md quotes them)
RELIABILITY_RUN := ^(TestFaultInjection|TestCrashAfterClaim|TestStorm.*|TestRegions.*|TestPropertyNoCrossScope.*|TestLateArrivals|TestBadInputs)$$
reliability: deps
	@mkdir -p bin
	@IDEMKIT_RELIABILITY=full $(GO) test -race -count=1 -timeout 30m -v -run '$(RELIABILITY_RUN)' ./integration/ > bin/reliability.log 2>&1; \
		status=$$?; grep -E '^(--- |ok|FAIL)|RELIABILITY |panic' bin/reliability.log; exit $$status

## fuzz: every fuzz target for $(FUZZTIME) each (fuzz-list: just list them)
# Targets are found in the sources (func FuzzX in a _test.go file), so
# that only the packages that have one get a test binary built.
FUZZ_TARGETS = grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | grep -v '/testdata/' | sort -u | \
	while IFS=: read -r file fn; do echo "$$(dirname "$$file") $${fn\#func }"; done

.PHONY: fuzz-list
fuzz-list:
	@$(FUZZ_TARGETS)

fuzz:
	@set -e; $(FUZZ_TARGETS) | while read -r pkg f; do \
		echo "fuzz $$pkg $$f"; \
		$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg </dev/null; \
	done

## test-moto: the DynamoDB tests against moto_server, a second server
## (optional: pip install 'moto[server]'); prints the capability skips,
## full output in bin/test-moto.log
MOTO_PKGS = $(shell grep -rl --include='*_test.go' 'idemkit/internal/dynalite"' . | xargs -n1 dirname | sort -u)
.PHONY: test-moto
test-moto: deps
	@command -v moto_server >/dev/null 2>&1 || { echo "test-moto: moto_server is not on PATH; it is optional (make test needs only dynalite): pip install 'moto[server]'" >&2; exit 1; }
	@mkdir -p bin
	@IDEMKIT_TEST_SERVER=moto $(GO) test -count=1 -timeout 15m -v $(MOTO_PKGS) > bin/test-moto.log 2>&1; \
		status=$$?; grep -E '^\s*--- (SKIP|FAIL)|^(ok|FAIL|panic)|skipping: the test server' bin/test-moto.log; exit $$status

clean:
	rm -rf bin dist .aws-sam
