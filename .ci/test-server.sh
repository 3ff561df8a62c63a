#!/usr/bin/env bash
# test-server.sh: the tests that use a DynamoDB-compatible server
# (internal/testing/dynalite), run against the server IDEMKIT_TEST_SERVER names,
# module by module. Usage: .ci/test-server.sh SERVER MODULE... ; output in
# bin/test-SERVER.log; prints failures, one line per capability the server
# lacks and a closing summary (.ci/server-summary.sh).
# RACE=1 adds the race detector.
set -uo pipefail
GO=${GO:-go}
server=$1
shift
flags=(-count=1 -timeout 15m -v)
[ "${RACE:-0}" = 1 ] && flags+=(-race)
mkdir -p bin
log=bin/test-$server.log
: > "$log"
status=0
for m in "$@"; do
	mod=$(cd "$m" && "$GO" env GOMOD)
	pkgs=()
	for d in $(grep -rl --include='*_test.go' 'idemkit/internal/testing/dynalite"' "$m" | xargs -r -n1 dirname | sort -u); do
		# Only the packages of this module, not of a module nested in it.
		[ "$(cd "$d" && "$GO" env GOMOD)" = "$mod" ] && pkgs+=("./$(realpath --relative-to="$m" "$d")")
	done
	[ ${#pkgs[@]} -gt 0 ] || continue
	echo "go test on $server ($m): ${#pkgs[@]} packages"
	echo "go test on $server ($m): ${pkgs[*]}" >> "$log"
	(cd "$m" && IDEMKIT_TEST_SERVER=$server "$GO" test "${flags[@]}" "${pkgs[@]}") >> "$log" 2>&1 || status=1
done
"$(dirname "$0")/server-summary.sh" "$server" "$log" || status=1
exit $status
