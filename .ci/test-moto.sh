#!/usr/bin/env bash
# test-moto.sh: the tests that use a DynamoDB-compatible server
# (internal/dynalite), run against moto_server, module by module.
# Usage: .ci/test-moto.sh MODULE... ; output in bin/test-moto.log.
set -uo pipefail
GO=${GO:-go}
root=$(pwd)
if ! command -v moto_server >/dev/null 2>&1; then
	echo "test-moto: moto_server is not on PATH; it is optional (make test needs only dynalite): pip install 'moto[server]'" >&2
	exit 1
fi
mkdir -p bin
: > bin/test-moto.log
status=0
for m in "$@"; do
	mod=$(cd "$m" && "$GO" env GOMOD)
	pkgs=()
	for d in $(grep -rl --include='*_test.go' 'idemkit/internal/dynalite"' "$m" | xargs -r -n1 dirname | sort -u); do
		# Only the packages of this module, not of a module nested in it.
		[ "$(cd "$d" && "$GO" env GOMOD)" = "$mod" ] && pkgs+=("./$(realpath --relative-to="$m" "$d")")
	done
	[ ${#pkgs[@]} -gt 0 ] || continue
	echo "go test on moto_server ($m): ${#pkgs[@]} packages"
	echo "go test on moto_server ($m): ${pkgs[*]}" >> bin/test-moto.log
	(cd "$m" && IDEMKIT_TEST_SERVER=moto "$GO" test -count=1 -timeout 15m -v "${pkgs[@]}") >> bin/test-moto.log 2>&1 || status=1
done
"$(dirname "$0")/moto-summary.sh" bin/test-moto.log || status=1
exit $status
