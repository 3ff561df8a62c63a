#!/usr/bin/env bash
# server-summary.sh: the summary of a `go test -v` log of a pass on one
# DynamoDB-compatible server (.ci/test-server.sh): failures as they are, one
# line per capability the server lacks with the number of tests it skipped,
# and a closing line
#   SERVER: N packages passed, M capabilities skipped: A (k tests), ...
# Usage: .ci/server-summary.sh SERVER LOG. Exits 1 when a package failed.
set -uo pipefail
server=${1:?usage: server-summary.sh SERVER LOG}
log=${2:?usage: server-summary.sh SERVER LOG}
grep -E '^\s*--- FAIL|^(FAIL|panic)' "$log"
awk -v server="$server" '
	/^ok[ \t]/ { passed++ }
	/^FAIL[ \t]/ { failed++ }
	/skipping: the test server \(.*\) lacks capability "/ {
		line = $0
		sub(/.*lacks capability "/, "", line)
		name = line; sub(/".*/, "", name)
		detail = line; sub(/^[^"]*": /, "", detail)
		if (!(name in count)) { order[++n] = name; why[name] = detail }
		count[name]++
	}
	END {
		list = ""
		for (i = 1; i <= n; i++) {
			c = order[i]
			tests = count[c] (count[c] == 1 ? " test" : " tests")
			printf "%s lacks %s: %s skipped (%s)\n", server, c, tests, why[c]
			list = list (i > 1 ? ", " : "") c " (" tests ")"
		}
		printf "%s: %d packages passed, %d capabilities skipped%s", server, passed, n, (n > 0 ? ": " list : "")
		if (failed > 0) printf ", %d packages FAILED", failed
		printf " (full output: %s)\n", FILENAME
		exit failed > 0
	}' "$log"
