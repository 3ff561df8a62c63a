#!/usr/bin/env bash
# consumer.sh: checks what depending on idemkit costs a user. It builds a
# throwaway module that imports idemkit, dynamo and lambda/apigw (through a
# replace of this checkout), runs `go mod tidy`, and fails when the
# consumer's module graph or go.sum grows past the figures below, e.g.
# because a test-only dependency moved back into the root go.mod (test-only
# dependencies live in the nested modules lab/, integration/, examples/,
# internal/testing/localstack/ and samlocal/). docs/MODULES.md states the measured figures.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-go}

# Measured: 29 modules (the consumer included) and 48 go.sum lines; before
# the nested modules, 78 and 142.
max_modules=${IDEMKIT_MAX_MODULES:-29}
max_sum=${IDEMKIT_MAX_SUM_LINES:-48}

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
min=$(awk '$1 == "go" { print $2; exit }' "$root/go.mod")
cat > "$dir/go.mod" <<MOD
module example.com/consumer

go $min

require github.com/idemkit/idemkit v0.0.0

replace github.com/idemkit/idemkit => $root
MOD
cat > "$dir/main.go" <<'SRC'
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/lambda/apigw"
)

func handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return events.APIGatewayV2HTTPResponse{StatusCode: 201}, nil
}

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	store, err := dynamo.New(dynamodb.NewFromConfig(cfg), "idempotency", dynamo.Options{})
	if err != nil {
		log.Fatal(err)
	}
	g, err := idemkit.New(idemkit.Config{Store: store})
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(apigw.WrapV2(g, apigw.Config{Tenant: apigw.JWTClaim("sub")}, handle))
}
SRC
cd "$dir"
if ! out=$(GOFLAGS=-mod=mod $GO mod tidy 2>&1); then
	case $out in
	*"dial tcp"* | *"no such host"* | *"connection refused"* | *"GOPROXY=off"* | *"module lookup disabled"*)
		echo "consumer: SKIPPED: go mod tidy cannot reach the module proxy: $(printf '%s\n' "$out" | tail -n 1)"
		exit 0 ;;
	esac
	printf '%s\n' "$out" >&2
	exit 1
fi
GOFLAGS=-mod=readonly $GO build -o /dev/null .
modules=$(GOFLAGS=-mod=readonly $GO list -m all | wc -l)
sum=$(wc -l < go.sum)
echo "consumer: a module importing idemkit, dynamo and lambda/apigw: $modules modules in its graph, $sum go.sum lines (limits $max_modules, $max_sum)"
fail=0
if [ "$modules" -gt "$max_modules" ]; then
	echo "consumer: FAIL: $modules modules > $max_modules:" >&2
	GOFLAGS=-mod=readonly $GO list -m all >&2
	fail=1
fi
if [ "$sum" -gt "$max_sum" ]; then
	echo "consumer: FAIL: go.sum has $sum lines > $max_sum" >&2
	fail=1
fi
exit $fail
