#!/usr/bin/env bash
# compat.sh: builds the library packages with the oldest Go release the
# root go.mod allows (its `go` line), so a raise of that floor by a
# dependency, or a use of a newer standard-library API, fails CI instead of
# a user's build. The toolchain is fetched through the module proxy
# (GOTOOLCHAIN); when it cannot be had (offline), the check is skipped with
# a message.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

min=$(awk '$1 == "go" { print $2; exit }' go.mod)
case $min in
	*.*.*) tc=go$min ;;
	*) tc=go$min.0 ;;
esac
if ! out=$(GOTOOLCHAIN=$tc $GO version 2>&1); then
	echo "compat: SKIPPED: cannot obtain the $tc toolchain: $(printf '%s\n' "$out" | tail -n 1)"
	exit 0
fi
pkgs=(. ./dynamo ./fingerprint ./httpmw ./idemclient ./lambda/... ./memstore ./observe ./storetest ./warmcache ./cmd/idemkit)
GOTOOLCHAIN=$tc GOFLAGS=-mod=readonly $GO build "${pkgs[@]}"
echo "compat: the library builds with $out"
