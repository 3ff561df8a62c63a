#!/usr/bin/env bash
# newest-go.sh: the newest Go release, beside the machine's own and the
# oldest that go.mod allows (compat.sh). Every module is built and vetted
# with it, and the library module's tests run on it (without the race
# detector: the machine's Go runs them with it). NEWEST_GO names the
# release; a new Go release is that one line in the Makefile. The
# toolchain is fetched through the module proxy (GOTOOLCHAIN); when it
# cannot be had (offline), the step is skipped with a message.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
tc=${NEWEST_GO:?NEWEST_GO names the newest Go release, e.g. go1.27.4}
modules=${MODULES:-.}

if ! out=$(GOTOOLCHAIN=$tc $GO version 2>&1); then
	echo "newest-go: SKIPPED: cannot obtain the $tc toolchain: $(printf '%s\n' "$out" | tail -n 1)"
	exit 0
fi
for m in $modules; do
	echo "newest-go ($m): build and vet with $tc"
	(cd "$m" && GOTOOLCHAIN=$tc GOFLAGS=-mod=readonly $GO build -o /dev/null ./... && GOTOOLCHAIN=$tc GOFLAGS=-mod=readonly $GO vet ./...)
done
echo "newest-go (.): go test with $tc"
GOTOOLCHAIN=$tc GOFLAGS=-mod=readonly $GO test -count=1 -timeout 15m ./...
echo "newest-go: every module builds and vets, and the library's tests pass, with $out"
