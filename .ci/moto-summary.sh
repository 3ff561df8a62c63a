#!/usr/bin/env bash
# moto-summary.sh: the summary of a `go test -v` log of the moto pass
# (.ci/test-moto.sh): failures as they are, one line per capability moto
# lacks with the number of tests it skipped, and a closing line
#   moto: N packages passed, M capabilities skipped: A (k tests), ...
# Usage: .ci/moto-summary.sh LOG. Exits 1 when a package failed.
set -uo pipefail
log=${1:?usage: moto-summary.sh LOG}
grep -E '^\s*--- FAIL|^(FAIL|panic)' "$log"
awk '
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
			printf "moto lacks %s: %s skipped (%s)\n", c, tests, why[c]
			list = list (i > 1 ? ", " : "") c " (" tests ")"
		}
		printf "moto: %d packages passed, %d capabilities skipped%s", passed, n, (n > 0 ? ": " list : "")
		if (failed > 0) printf ", %d packages FAILED", failed
		printf " (full output: %s)\n", FILENAME
		exit failed > 0
	}' "$log"
